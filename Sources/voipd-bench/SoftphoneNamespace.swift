import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A private network namespace (`unshare -n`) with `lo`, 10.77.0.1 on it and a default
/// route through it (liblinphone opens no SIP socket without one), where Kamailio and
/// unmodified softphones run on the standard ports without meeting anyone else's. A holder
/// process keeps it (`exec cat` on a pipe the bench holds); programs enter it with
/// `nsenter`, which execs them. Everything is started through ``GuardedExec``, so that a
/// bench that dies leaves nothing behind; ``stop()`` ends them by pid.
final class SoftphoneNamespace {
    static let address = "10.77.0.1"

    let directory: String
    private let holder: PidFd
    private var holderInput: DescriptorBox?
    private var programs: [Program] = []

    /// A started program's pidfd (not copyable, so kept in a reference to sit in an array).
    private final class Program {
        let process: PidFd
        init(_ process: consuming PidFd) { self.process = process }
    }

    init() throws {
        directory = try makeTemporaryDirectory("voipd-bench-softphones")
        let script = "/usr/sbin/ip link set lo up && /usr/sbin/ip addr add \(Self.address)/32 dev lo"
            + " && /usr/sbin/ip route add default dev lo src \(Self.address) && echo ready && exec /usr/bin/cat"
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let log = try openFile(directory + "/namespace.log", flags: O_WRONLY | O_CREAT | O_TRUNC)
        holder = try spawn(SpawnRequest(arguments: GuardedExec.wrap(["/usr/bin/unshare", "-n", "--", "/bin/sh", "-c", script]),
                                        environment: currentEnvironment(), standardInput: readEnd.rawValue,
                                        standardOutput: log.rawValue, standardError: log.rawValue))
        holderInput = DescriptorBox(writeEnd)
        try waitForLog("namespace.log", containing: "ready", timeout: .seconds(10))
    }

    /// Starts `arguments` in the namespace with its output appended to `log` (in the
    /// namespace's directory); standard input is /dev/null unless given.
    @discardableResult
    func start(_ arguments: [String], log: String, environment: [String] = currentEnvironment(), input: CInt? = nil) throws -> pid_t {
        let output = try openFile(directory + "/" + log, flags: O_WRONLY | O_CREAT | O_APPEND)
        let null = try openFile("/dev/null", flags: O_RDONLY)
        let command = GuardedExec.wrap(["/usr/bin/nsenter", "--net=/proc/\(holder.pid)/ns/net", "--"] + arguments)
        let process = try spawn(SpawnRequest(arguments: command, environment: environment, standardInput: input ?? null.rawValue,
                                             standardOutput: output.rawValue, standardError: output.rawValue))
        let pid = process.pid
        programs.append(Program(process))
        return pid
    }

    /// Ends one program: SIGTERM, SIGKILL to its session after 5 s; reaps it.
    func stop(_ pid: pid_t) {
        guard let index = programs.firstIndex(where: { $0.process.pid == pid }) else { return }
        let program = programs.remove(at: index)
        try? program.process.send(SIGTERM)
        if (try? waitReadable(program.process.descriptor.rawValue, milliseconds: 5000)) != true { kill(-pid, SIGKILL) }
        _ = try? program.process.waitForExit()
    }

    /// Ends every program, the holder, and removes the directory.
    func stop() {
        for program in programs.reversed() { stop(program.process.pid) }
        holderInput = nil
        if (try? waitReadable(holder.descriptor.rawValue, milliseconds: 5000)) != true { try? holder.send(SIGKILL) }
        _ = try? holder.waitForExit()
        removeTree(directory)
    }

    func path(_ log: String) -> String { directory + "/" + log }

    /// Waits until a log file of the namespace's directory contains `text` (inotify).
    func waitForLog(_ log: String, containing text: String, timeout: Duration) throws {
        let path = path(log)
        if access(path, F_OK) != 0 { _ = try openFile(path, flags: O_WRONLY | O_CREAT) }
        guard try waitForText(text, in: path, until: MonotonicInstant.now + timeout) else {
            throw BenchError("no \"\(text)\" in \(path) within \(timeout); it ends:\n\((ProcFS.read(path) ?? "").suffix(2000))")
        }
    }
}

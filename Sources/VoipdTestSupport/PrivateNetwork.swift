import Glibc
import VoipdSystem
import VoipdVocabulary

/// A network namespace of its own (`unshare -n`), with only `lo` and an extra address on it
/// (and, when asked, a default route through it: liblinphone treats a network without one as
/// down). SIP programs inside use the standard ports without meeting anyone else's Kamailio or
/// baresip. The namespace lives as long as a holder process (`unshare -n … exec cat`, reading
/// a pipe held here); programs enter it with `nsenter --net=/proc/HOLDER/ns/net`, which execs
/// them, so their pids are theirs. ``stop()`` ends them all by pidfd.
public final class PrivateNetwork {
    public static let tools = ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip", "/usr/bin/cat"]
    /// Whether it can be made here: the tools, and root (a network namespace needs
    /// CAP_SYS_ADMIN). Under CI=true the tests run anyway, and fail.
    public static let isAvailable = tools.allSatisfy(toolExists) && geteuid() == 0
    public static let skipReason = "needs root and \(tools.joined(separator: ", ")) for a private network namespace"

    /// The extra address on `lo`, for programs that want one that is not loopback.
    public static let address = "10.77.0.1"

    public let directory: String
    private let wrap: ([String]) -> [String]
    private let holder: TestProcess
    private var input: DescriptorBox?
    private var started: [TestProcess] = []

    /// `wrap` makes the command line that starts each process (a benchmark's guard that ends
    /// it with the benchmark).
    public init(defaultRoute: Bool = false, wrap: @escaping ([String]) -> [String] = { $0 }) throws {
        guard Self.isAvailable else { throw TestFailure("CI=true requires these tests to run: \(Self.skipReason)") }
        self.wrap = wrap
        directory = try makeTemporaryDirectory("voipd-netns")
        let route = defaultRoute ? " && /usr/sbin/ip route add default dev lo src \(Self.address)" : ""
        let script = "/usr/sbin/ip link set lo up && /usr/sbin/ip addr add \(Self.address)/32 dev lo\(route) && echo ready && exec /usr/bin/cat"
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        let log = try openFile(directory + "/namespace.log", flags: O_WRONLY | O_CREAT | O_TRUNC)
        holder = try TestProcess(wrap(["/usr/bin/unshare", "-n", "--", "/bin/sh", "-c", script]), output: log.rawValue) {
            $0.standardInput = readEnd.rawValue
        }
        input = DescriptorBox(writeEnd)
        do {
            try waitForLog("namespace.log", containing: "ready", timeout: .seconds(10))
        } catch {
            holder.stop()
            removeTree(directory)
            throw error
        }
    }

    /// Starts `arguments` inside the namespace, its output appended to `log` in the
    /// namespace's directory, standard input /dev/null unless `adjust` says otherwise.
    /// Stopped with the namespace if not before.
    public func start(_ arguments: [String], log: String, environment: [String] = currentEnvironment(),
                      adjust: (inout SpawnRequest) -> Void = { _ in }) throws -> TestProcess {
        let output = try openFile(path(log), flags: O_WRONLY | O_CREAT | O_APPEND)
        let null = try openFile("/dev/null", flags: O_RDONLY)
        let process = try TestProcess(wrap(entering(arguments)), environment: environment, output: output.rawValue) {
            $0.standardInput = null.rawValue
            adjust(&$0)
        }
        started.append(process)
        return process
    }

    /// The command line that runs `arguments` inside the namespace (nsenter execs them, so
    /// the pid is theirs): for a process someone else starts, such as an app voipd launches.
    public func entering(_ arguments: [String]) -> [String] {
        ["/usr/bin/nsenter", "--net=/proc/\(holder.pid)/ns/net", "--"] + arguments
    }

    /// A file of the namespace's directory.
    public func path(_ name: String) -> String { directory + "/" + name }

    public func read(_ log: String) -> String { ProcFS.read(path(log)) ?? "" }

    /// Waits until the log `log` of the namespace's directory contains `text` (by inotify).
    public func waitForLog(_ log: String, containing text: String, timeout: Duration) throws {
        guard try waitForText(text, in: path(log), until: MonotonicInstant.now + timeout) else {
            throw TestFailure("no \"\(text)\" in \(path(log)) within \(timeout); it ends:\n\(read(log).suffix(2000))")
        }
    }

    /// Ends a program started here: SIGTERM, so that programs with workers end them; SIGKILL
    /// to its session after 5 s.
    public func stop(_ process: TestProcess) {
        started.removeAll { $0 === process }
        process.terminate()
    }

    /// Ends what was started in it, last first, then the holder; removes the directory.
    public func stop() {
        for process in started.reversed() { process.terminate() }
        started = []
        input = nil
        _ = try? holder.waitForExit(.seconds(5))
        holder.stop()
        removeTree(directory)
    }

    deinit { stop() }
}

/// Kamailio with the project's configuration (Deploy/kamailio/kamailio.cfg) inside a
/// private network, on 127.0.0.1:PORT for both UDP and TCP (run-kamailio.sh listens on TCP
/// only; `-l` adds listeners to the configuration's).
public enum NamespacedKamailio {
    public static let configuration = packageDirectory + "/Deploy/kamailio/kamailio.cfg"

    /// `maxExpires`: the longest registration it grants (Kamailio's configuration grants 3600 s).
    /// `defines`: kamailio.cfg's other variants (`WITHOUT_CONNECTION_REUSE`, …), as
    /// run-kamailio.sh's options give them.
    @discardableResult
    public static func start(in network: PrivateNetwork, binary: String = KamailioServer.binary, port: UInt16, maxExpires: Int? = nil,
                             defines: [String] = []) throws -> TestProcess {
        let run = network.path("kamailio")
        mkdir(run, 0o755)
        let expiry = maxExpires.map { ["-A", "MAX_EXPIRES=\($0)"] } ?? []
        let process = try network.start([binary, "-f", configuration, "-A", "SIP_PORT=\(port)"] + expiry
                                        + defines.flatMap { ["-A", $0] }
                                        + ["-l", "udp:127.0.0.1:\(port)", "-l", "tcp:127.0.0.1:\(port)", "-DD", "-E",
                                           "-Y", run, "-P", run + "/kamailio.pid", "-w", run, "-m", "64", "-M", "8"], log: "kamailio.log")
        try network.waitForLog("kamailio.log", containing: "voipd: kamailio ready", timeout: .seconds(15))
        return process
    }
}

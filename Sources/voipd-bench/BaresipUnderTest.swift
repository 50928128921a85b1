import Glibc
import VoipClient
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// baresip, unmodified (Debian's baresip-core), as a callee of `voipd-bench sip`: on
/// 127.0.0.1 at a free port, registering over TCP at the registrar (calls come down that
/// connection), answering by itself, its audio in memory (`aubridge`). Either unsupervised
/// (a child of the bench through ``GuardedExec``) or launched by voipd from a manifest that
/// adopts it; its log comes to the bench on a FIFO (a manifest cannot pass a descriptor).
/// Configured from Deploy/softphones/baresip.config, as the adoption tests run it.
final class BaresipUnderTest: CalleeUnderTest {
    let user: String
    /// Its SIP port (UDP and TCP; TLS on the next), once it has bound it: baresip binds it
    /// itself, and a port found free may be taken before it does, so it is started again on
    /// another when it says the address is in use.
    private(set) var port: UInt16?
    private let directory: String
    private let address: String
    /// Unsupervised: its pidfd, for ``stop()``. Adopted: nil (voipd ends it).
    private var process: AppProcessHandle?
    let log: ChildLog
    static let registeredLine = "200 OK"
    /// What it says once its SIP transports are bound, before it registers.
    static let readyLine = "baresip is ready."
    /// Adopted: the pid voipd launched it with.
    private var launchedPID: pid_t?

    /// Its pid: unsupervised, from the start; adopted, once voipd launched it.
    var pid: pid_t? { process?.pidfd.pid ?? launchedPID }
    var description: String { "baresip (\(user))" }
    var kernelState: Character? { pid.flatMap(ProcFS.state(of:)) }

    /// Writes its configuration into `directory` (made here) and, adopted, the app's
    /// manifest into `apps` (voipd reads manifests when it starts); then, unsupervised,
    /// starts it. Adopted, ``launch(_:)`` starts it.
    init(binary: String, directory: String, user: String, registrar: RegistrarUnderTest, adoptedInto apps: String?) throws {
        self.user = user
        self.directory = directory
        address = registrar.host
        mkdir(directory, 0o755)
        try writeTextFile(SoftphoneConfiguration.baresipAccount(user: user, registrar: registrar.address), to: directory + "/accounts")
        // Read and written by the bench, so that it never sees an end while baresip restarts.
        let fifo = directory + "/log"
        guard mkfifo(fifo, 0o600) == 0 else { throw Errno.current("mkfifo(\(fifo))") }
        log = ChildLog(try openFile(fifo, flags: O_RDWR | O_NONBLOCK))
        if let apps {
            mkdir(apps, 0o755)
            // Quiet once a 0.2 s window passes below the default rates: the figures are the
            // latencies, not the grace period.
            let manifest = SoftphoneConfiguration.adoptedBaresipManifest(binary: binary, home: directory, log: fifo, registrarPort: registrar.port,
                                                                         quietWindowSeconds: 0.2)
            try writeTextFile(manifest, to: apps + "/\(user).json")
        } else {
            process = try startUnsupervised(binary, output: fifo)
        }
    }

    /// Unsupervised: a child of the bench, its output to `fifo`; again, on another port, if
    /// its port was taken before it bound it.
    private func startUnsupervised(_ binary: String, output fifo: String) throws -> AppProcessHandle {
        try startOnFreePort("baresip", pickPort: { try freeSIPPortPair() }) { port in
            try configure(port)
            let output = try openFile(fifo, flags: O_WRONLY)
            let null = try openFile("/dev/null", flags: O_RDONLY)
            let started = AppProcessHandle(try spawn(SpawnRequest(arguments: GuardedExec.wrap([binary, "-f", directory]), environment: currentEnvironment(),
                                                                  standardInput: null.rawValue, standardOutput: output.rawValue,
                                                                  standardError: output.rawValue)))
            do {
                let outcome = try bound(port, by: started.pidfd)
                if case .addressInUse = outcome { _ = try started.pidfd.waitForExit() }
                return outcome.map { started }
            } catch {
                try? started.pidfd.send(SIGKILL)
                _ = try? started.pidfd.waitForExit()
                throw error
            }
        }
    }

    /// Adopted: voipd launches it from its manifest, in the foreground; again, on another
    /// port, once voipd has seen it end, if its port was taken before it bound it. `modes`
    /// follows voipd's event stream.
    func launch(_ modes: SoftphoneModes) throws -> pid_t {
        try startOnFreePort("baresip", pickPort: { try freeSIPPortPair() }) { port in
            try configure(port)
            let status = try modes.control.launchManifest(user)
            guard let pid = status.pid else { throw BenchError("voipd launched baresip but reports no pid (\(status.state))") }
            launchedPID = pid
            let outcome = try boundAdopted(pid, on: port)
            // voipd must know it ended before it launches it again.
            if case .addressInUse = outcome { try modes.waitForTermination("after it could not bind port \(port)") }
            return outcome.map { pid }
        }
    }

    /// ``bound(_:by:)`` for the baresip voipd launched as `pid`; killed if that fails.
    private func boundAdopted(_ pid: pid_t, on port: UInt16) throws -> PortBindOutcome<Void> {
        guard let process = try Self.process(pid) else {
            // Ended already, and reaped by voipd: what it said is in the log.
            guard let said = addressInUseLine(in: try log.drain().joined(separator: "\n")) else {
                throw BenchError("baresip ended on port \(port) before it was ready; its log ends:\n\(log.tail)")
            }
            return .addressInUse(said)
        }
        do {
            return try bound(port, by: process.pidfd)
        } catch {
            try? process.pidfd.send(SIGKILL)
            throw error
        }
    }

    /// A pidfd for `pid`, nil if it has ended (and been reaped) already.
    private static func process(_ pid: pid_t) throws -> AppProcessHandle? {
        do {
            return AppProcessHandle(try PidFd(pid: pid))
        } catch .noSuchProcess {
            return nil
        }
    }

    /// Its configuration, with its SIP on `port`.
    private func configure(_ port: UInt16) throws {
        try writeTextFile(SoftphoneConfiguration.baresip(address: address, sipPort: port), to: directory + "/config")
    }

    /// Whether baresip, just started on `port`, has bound it: it says it is ready once its
    /// transports are bound, or it ends at once saying the address is in use.
    private func bound(_ port: UInt16, by process: borrowing PidFd) throws -> PortBindOutcome<Void> {
        let inUse = String(cString: strerror(EADDRINUSE))
        let line = try log.waitForLine(milliseconds: 15_000, whileRunning: process.descriptor) { $0.contains(Self.readyLine) || $0.contains(inUse) }
        if let line, line.contains(Self.readyLine) {
            self.port = port
            return .bound(())
        }
        if let line { return .addressInUse(line) }
        throw BenchError("baresip ended on port \(port) before it was ready; its log ends:\n\(log.tail)")
    }

    /// Unsupervised: SIGTERM (it unregisters and exits), SIGKILL after 5 s; reaped.
    func stop() {
        guard let process else { return }
        try? process.pidfd.send(SIGTERM)
        if (try? waitReadable(process.pidfd.descriptor.rawValue, until: MonotonicInstant.now + .seconds(5))) != true { try? process.pidfd.send(SIGKILL) }
        _ = try? process.pidfd.waitForExit()
    }
}

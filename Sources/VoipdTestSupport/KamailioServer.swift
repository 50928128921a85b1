import Glibc
import VoipdSystem
import VoipdVocabulary

/// Kamailio with the project's configuration (Deploy/kamailio/run-kamailio.sh, which execs
/// Kamailio, so the child's pid is Kamailio's main process), on an ephemeral loopback port,
/// in a session of its own; its log in ``logPath``. On a machine without Kamailio its
/// tests are skipped, unless CI=true: then they fail.
public final class KamailioServer {
    /// `/usr/sbin/kamailio`, or `$KAMAILIO` (which run-kamailio.sh also honours).
    public static let binary = getenv("KAMAILIO").map { String(cString: $0) } ?? "/usr/sbin/kamailio"
    public static let isInstalled = access(binary, X_OK) == 0
    /// Whether its tests run: it is installed, or CI requires them (and they fail loudly).
    public static let shouldRun = isInstalled || runningUnderCI
    public static let skipReason = "\(binary) is not installed (apt-get install kamailio; with CI=true this is a failure)"

    public static var script: String { packageDirectory + "/Deploy/kamailio/run-kamailio.sh" }

    public let process: TestProcess
    public let port: UInt16
    public let directory: String
    public var logPath: String { directory + "/kamailio.log" }
    private var stopped = false

    /// Starts Kamailio with run-kamailio.sh's `options` (`--udp`, `--no-connection-reuse`,
    /// `--max-expires N`) and waits until it says it accepts connections. `binary` other
    /// than the default goes to the script as `$KAMAILIO`; `wrap` makes the command line
    /// that starts it (a benchmark's guard that ends it with the benchmark). Kamailio binds
    /// its port itself: on a port another process took after `pickPort` found it free
    /// (a free loopback port by default), it ends at once, and starts again on another.
    public init(binary: String = KamailioServer.binary, options: [String] = [], wrap: ([String]) -> [String] = { $0 },
                pickPort: (() throws -> UInt16)? = nil) throws {
        guard access(binary, X_OK) == 0 else { throw TestFailure("CI=true requires the Kamailio tests to run: \(Self.skipReason)") }
        let udp = options.contains("--udp")
        let directory = try makeTemporaryDirectory("voipd-kamailio")
        self.directory = directory
        let environment = currentEnvironment().filter { !$0.hasPrefix("KAMAILIO=") } + ["KAMAILIO=\(binary)"]
        do {
            (port, process) = try startOnFreePort("kamailio", pickPort: pickPort ?? { try freeLoopbackPort(udp: udp) }) { port in
                try Self.start(wrap([Self.script] + options + ["\(port)", directory + "/run"]), environment: environment,
                               log: directory + "/kamailio.log", port: port)
            }
        } catch {
            removeTree(directory)
            throw error
        }
    }

    /// One start on `port`: ready once it says so; a collision if it ends first saying the
    /// address is in use (it binds before it logs anything else of note).
    private static func start(_ command: [String], environment: [String], log path: String,
                              port: UInt16) throws -> PortBindOutcome<(UInt16, TestProcess)> {
        let since = fileSize(path) ?? 0
        let log = try openFile(path, flags: O_WRONLY | O_CREAT | O_APPEND)
        let process = try TestProcess(command, environment: environment, output: log.rawValue)
        let outcome = try waitForContent(of: path, whileRunning: process.pidfd.descriptor, until: MonotonicInstant.now + .seconds(15)) {
            String(decoding: $0.utf8.dropFirst(Int(since)), as: UTF8.self).contains("voipd: kamailio ready")
        }
        switch outcome {
        case .satisfied:
            return .bound((port, process))
        case .timedOut:
            process.terminate(grace: .seconds(10))
            throw TestFailure("kamailio did not become ready on port \(port) within 15 s; its log:\n\(fileText(path, from: since))")
        case .ended:
            let status = try process.waitForExit(.seconds(10))
            let said = fileText(path, from: since)
            let code: Int32? = if case .exited(let code) = status { code } else { nil }
            guard reportsAddressInUse(exitStatus: code, log: said) else {
                throw TestFailure("kamailio ended before it was ready on port \(port) (\(status)); its log:\n\(said)")
            }
            return .addressInUse(addressInUseLine(in: said) ?? "\(status)")
        }
    }

    deinit { stop() }

    /// What it has logged.
    public var log: String { ProcFS.read(logPath) ?? "" }

    /// Waits until its log contains `text`: false if `deadline` passes first.
    public func waitForLog(_ text: String, until deadline: MonotonicInstant) throws -> Bool {
        try waitForText(text, in: logPath, until: deadline)
    }

    /// SIGTERM to Kamailio's main process, which ends its workers; SIGKILL to its process
    /// group (its own session) if it lingers past 10 s. Reaps it and removes its directory.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        process.terminate(grace: .seconds(10))
        removeTree(directory)
    }
}

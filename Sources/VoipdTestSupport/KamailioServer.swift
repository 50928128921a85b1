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

    public let process: PidFd
    public let port: UInt16
    public let directory: String
    public var logPath: String { directory + "/kamailio.log" }
    private var stopped = false

    /// Starts Kamailio with run-kamailio.sh's `options` (`--udp`, `--no-connection-reuse`,
    /// `--max-expires N`) and waits until it says it accepts connections. `binary` other
    /// than the default goes to the script as `$KAMAILIO`; `wrap` makes the command line
    /// that starts it (a benchmark's guard that ends it with the benchmark).
    public init(binary: String = KamailioServer.binary, options: [String] = [], wrap: ([String]) -> [String] = { $0 }) throws {
        guard access(binary, X_OK) == 0 else { throw TestFailure("CI=true requires the Kamailio tests to run: \(Self.skipReason)") }
        port = try freeLoopbackPort(udp: options.contains("--udp"))
        directory = try makeTemporaryDirectory("voipd-kamailio")
        let log = try openFile(directory + "/kamailio.log", flags: O_WRONLY | O_CREAT | O_APPEND)
        let command = wrap([Self.script] + options + ["\(port)", directory + "/run"])
        process = try spawn(SpawnRequest(arguments: command, environment: currentEnvironment().filter { !$0.hasPrefix("KAMAILIO=") } + ["KAMAILIO=\(binary)"],
                                         standardOutput: log.rawValue, standardError: log.rawValue))
        guard try waitForText("voipd: kamailio ready", in: logPath, until: MonotonicInstant.now + .seconds(15)) else {
            stop()
            throw TestFailure("kamailio did not become ready on port \(port); its log:\n\(self.log)")
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
    /// group (its own session) if it lingers. Reaps it and removes its directory.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        try? process.send(SIGTERM)
        if (try? waitReadable(process.descriptor, timeoutMilliseconds: 10_000)) != true {
            kill(-process.pid, SIGKILL)
        }
        _ = try? process.waitForExit()
        removeTree(directory)
    }
}

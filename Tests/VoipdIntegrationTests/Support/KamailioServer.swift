import Foundation
import Glibc
import SIP
import VoipdSystem
import VoipdTestSupport

/// Kamailio with the project's configuration (Deploy/kamailio/run-kamailio.sh, which execs
/// Kamailio, so the child's pid is Kamailio's main process), on an ephemeral loopback port.
/// On a machine without Kamailio its tests are skipped, unless CI=true: then they fail.
final class KamailioServer {
    static let binary = ProcessInfo.processInfo.environment["KAMAILIO"] ?? "/usr/sbin/kamailio"
    static let isInstalled = access(binary, X_OK) == 0
    static let isRequired = ProcessInfo.processInfo.environment["CI"] == "true"
    /// Whether its tests run: it is installed, or it is required (and they fail loudly).
    static let shouldRun = isInstalled || isRequired
    static let skipReason = "\(binary) is not installed (apt-get install kamailio; with CI=true this is a failure)"

    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Deploy/kamailio/run-kamailio.sh").path

    let process: TestProcess
    let port: UInt16
    let directory: String
    var logPath: String { directory + "/kamailio.log" }

    /// Starts Kamailio with run-kamailio.sh's `options` (`--udp`, `--no-connection-reuse`,
    /// `--max-expires N`) and waits until it says it accepts connections.
    init(options: [String] = []) throws {
        guard Self.isInstalled else { throw TimedOut(description: "CI=true requires the Kamailio tests to run: \(Self.skipReason)") }
        port = try Self.freePort(udp: options.contains("--udp"))
        directory = try makeTemporaryDirectory("voipd-kamailio")
        let log = try openFile(directory + "/kamailio.log", flags: O_WRONLY | O_CREAT | O_APPEND)
        process = try TestProcess([Self.script] + options + ["\(port)", directory + "/run"], output: log.rawValue)
        do {
            try waitForText("voipd: kamailio ready", in: logPath, timeout: .seconds(15))
        } catch {
            stop()
            throw error
        }
    }

    var log: String { ProcFS.read(logPath) ?? "" }

    /// SIGTERM to Kamailio's main process, which ends its workers; SIGKILL to its process
    /// group (its own session) if it lingers.
    func stop() {
        try? process.pidfd.send(SIGTERM)
        if (try? process.waitForExit(.seconds(10))) == nil {
            kill(-process.pid, SIGKILL)
            process.stop()
        }
        removeTree(directory)
    }

    // The kernel picks a port that is free now (for UDP too, with `udp`); Kamailio binds it
    // a moment later.
    private static func freePort(udp: Bool) throws -> UInt16 {
        for _ in 0..<16 {
            let listener = try Socket.listenTCP()
            let port = try Socket.localPort(listener)
            guard udp else { return port }
            if let address = SIPSocketAddress(numericHost: "127.0.0.1", port: port), (try? SIPDatagramSocket(binding: address)) != nil {
                return port
            }
        }
        throw TimedOut(description: "no port free for both TCP and UDP")
    }
}

import Glibc
import SIP
import VoipdSystem
import VoipdTestSupport

/// The softphone run with `--unsupervised` (no voipd), in its own session, its output in a
/// log file of its own directory; ``stop()`` kills it by pid.
final class UnsupervisedSoftphone {
    let process: TestProcess
    let directory: String
    let registrarPort: UInt16
    let user: String
    var logPath: String { directory + "/softphone.log" }

    /// Starts `softphone --unsupervised --registrar 127.0.0.1:PORT --user USER ARGUMENTS` and
    /// waits until it has registered.
    init(registrarPort: UInt16, user: String = "alice", _ arguments: [String]) throws {
        self.registrarPort = registrarPort
        self.user = user
        directory = try makeTemporaryDirectory("voipd-softphone")
        let log = try openFile(directory + "/softphone.log", flags: O_WRONLY | O_CREAT | O_APPEND)
        process = try TestProcess(
            [Binaries.path("softphone"), "--unsupervised", "--registrar", "127.0.0.1:\(registrarPort)", "--user", user] + arguments,
            output: log.rawValue)
        do {
            try waitForLog("sip: registered for")
        } catch {
            stop()
            throw error
        }
    }

    var pid: pid_t { process.pid }

    /// The log so far.
    var log: String { ProcFS.read(logPath) ?? "" }

    func waitForLog(_ text: String, timeout: Duration = .seconds(20)) throws {
        try waitForText(text, in: logPath, timeout: timeout)
    }

    /// Runs `softphone call sip:USER@127.0.0.1:PORT --from bob ARGUMENTS`; its status and output.
    func call(_ arguments: [String] = []) throws -> (status: Int32, output: String) {
        try runCommand([Binaries.path("softphone"), "call", "sip:\(user)@127.0.0.1:\(registrarPort)", "--from", "bob"] + arguments)
    }

    /// The log's lines that contain `text`.
    func lines(containing text: String) -> [Substring] {
        log.split(separator: "\n").filter { $0.contains(text) }
    }

    func stop() {
        process.stop()
        removeTree(directory)
    }
}

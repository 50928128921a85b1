import Glibc
import VoipClient
import VoipdSystem

/// The softphone, launched by voipd (its child, as in real use) in the foreground, its log
/// on a pipe to the bench, known by pidfd so that it is killed without a pid-reuse race.
final class SoftphoneUnderTest {
    static let name = "softphone"
    static let user = "alice"
    let process: PidFd
    private let log: ChildLog

    /// `softphone --registrar HOST:PORT --user alice --answer-after 0`: it answers at once,
    /// so a call is over a few round trips after its 180.
    init(binary: String, registrar: String, control: VoipdControl) throws {
        let arguments = [binary, "--registrar", registrar, "--user", Self.user, "--answer-after", "0"]
        let pipe = try makePipe()
        let readEnd = pipe.first
        let writeEnd = pipe.second
        log = ChildLog(readEnd)
        let status = try control.launch(arguments, name: Self.name, output: writeEnd.rawValue)
        // voipd has passed its copy on; ours would only keep the pipe from ever ending.
        try writeEnd.close()
        guard let pid = status.pid else { throw BenchError("voipd launched the softphone but reports no pid (\(status.state))") }
        process = try PidFd(pid: pid)
    }

    var pid: pid_t { process.pid }

    /// Waits for its log to say that the registrar accepted its REGISTER.
    func waitUntilRegistered(milliseconds: Int32) throws {
        do {
            try log.waitForLine(containing: "sip: registered for", milliseconds: milliseconds)
        } catch {
            throw BenchError("the softphone did not register: \(error); its log ends:\n\(log.tail)")
        }
    }

    /// Reads what it has logged without waiting (between calls: a full pipe would block it).
    func drain() throws { try log.drain() }

    var logTail: String { log.tail }

    /// The kernel's state letter (T: stopped).
    var kernelState: Character? { ProcFS.state(of: pid) }

    /// Resumes it if stopped and kills it; voipd, its parent, reaps it.
    func kill() {
        try? process.send(SIGCONT)
        try? process.send(SIGKILL)
    }
}

import Glibc
import VoipClient
import VoipdSystem

/// The softphone, launched by voipd (its child, as in real use) in the foreground, its log
/// on a pipe to the bench, known by pidfd so that it is killed without a pid-reuse race.
final class SoftphoneUnderTest: CalleeUnderTest {
    static let name = "softphone"
    static let user = "alice"
    let process: PidFd
    let log: ChildLog
    let description = "the softphone"
    static let registeredLine = "sip: registered for"

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

    var kernelState: Character? { ProcFS.state(of: pid) }

    /// Resumes it if stopped and kills it; voipd, its parent, reaps it.
    func kill() {
        try? process.send(SIGCONT)
        try? process.send(SIGKILL)
    }
}

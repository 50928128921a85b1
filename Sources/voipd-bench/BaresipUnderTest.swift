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
    let port: UInt16
    /// Unsupervised: its pidfd, for ``stop()``. Adopted: nil (voipd ends it).
    private let process: AppProcessHandle?
    let log: ChildLog
    static let registeredLine = "200 OK"
    /// Adopted: the pid voipd launched it with.
    private var launchedPID: pid_t?

    /// Its pid: unsupervised, from the start; adopted, once voipd launched it.
    var pid: pid_t? { process?.pidfd.pid ?? launchedPID }
    var description: String { "baresip (\(user))" }
    var kernelState: Character? { pid.flatMap(ProcFS.state(of:)) }

    /// Writes its configuration into `directory` (made here) and, adopted, the app's
    /// manifest into `apps` (voipd reads manifests when it starts); then, unsupervised,
    /// starts it. Adopted, ``launch(_:name:)`` starts it.
    init(binary: String, directory: String, user: String, registrar: RegistrarUnderTest, adoptedInto apps: String?) throws {
        self.user = user
        port = try freeSIPPortPair()
        mkdir(directory, 0o755)
        try writeTextFile(SoftphoneConfiguration.baresip(address: registrar.host, sipPort: port), to: directory + "/config")
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
            process = nil
        } else {
            let output = try openFile(fifo, flags: O_WRONLY)
            let null = try openFile("/dev/null", flags: O_RDONLY)
            process = AppProcessHandle(try spawn(SpawnRequest(arguments: GuardedExec.wrap([binary, "-f", directory]), environment: currentEnvironment(),
                                             standardInput: null.rawValue, standardOutput: output.rawValue, standardError: output.rawValue)))
        }
    }

    /// Adopted: voipd launches it from its manifest, in the foreground.
    func launch(_ control: VoipdControl) throws -> pid_t {
        let status = try control.launchManifest(user)
        guard let pid = status.pid else { throw BenchError("voipd launched baresip but reports no pid (\(status.state))") }
        launchedPID = pid
        return pid
    }

    /// Unsupervised: SIGTERM (it unregisters and exits), SIGKILL after 5 s; reaped.
    func stop() {
        guard let process else { return }
        try? process.pidfd.send(SIGTERM)
        if (try? waitReadable(process.pidfd.descriptor.rawValue, until: MonotonicInstant.now + .seconds(5))) != true { try? process.pidfd.send(SIGKILL) }
        _ = try? process.pidfd.waitForExit()
    }
}

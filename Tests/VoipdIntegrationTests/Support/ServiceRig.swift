import Foundation
import Glibc
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// voipd run the way systemd runs it, in a private directory: the notify socket and fd
/// store (``ServiceManagerStandIn``), a report socket for test apps, an apps directory
/// for manifests, and one log for every voipd started. ``stop()`` ends every process
/// started (daemons and apps, by pid) and removes the directory.
final class ServiceRig {
    static let socketActivate = "/usr/bin/systemd-socket-activate"

    let directory: String
    let socketPath: String
    let logPath: String
    let appsDirectory: String
    /// An empty configuration file of the rig's own (``Binaries/ownConfiguration(in:appsDirectory:)``).
    private let configuration: [String]
    let manager: ServiceManagerStandIn
    let reports: ReportServer
    private let logFile: FileDescriptor
    private var daemons: [TestProcess] = []
    private var apps: [TestAppHandle] = []

    init() throws {
        directory = try makeTemporaryDirectory("voipd-systemd")
        socketPath = directory + "/voipd.sock"
        logPath = directory + "/voipd.log"
        appsDirectory = directory + "/apps.d"
        mkdir(appsDirectory, 0o755)
        configuration = try Binaries.ownConfiguration(in: directory, appsDirectory: false)
        manager = try ServiceManagerStandIn(path: directory + "/notify.sock")
        reports = try ReportServer(path: directory + "/report.sock")
        logFile = try openFile(logPath, flags: O_WRONLY | O_CREAT | O_APPEND)
    }

    /// Everything the daemons (and the apps they launched) wrote so far.
    var log: String { ProcFS.read(logPath) ?? "" }

    /// voipd's command line: this directory's socket and manifests, everything logged.
    func voipd(_ extra: [String] = []) -> [String] {
        [Binaries.voipd, "--socket", socketPath, "--log-level", "debug", "--no-memory-pressure-trigger"]
            + configuration + ["--apps-directory", appsDirectory] + extra
    }

    /// voipd under `systemd-socket-activate`, which binds the control socket, passes it as
    /// "control" and execs voipd at the first connection. Only `environment` reaches voipd
    /// (the tool passes no other variable), with `$NOTIFY_SOCKET`.
    /// `socketType` is the tool's option for the socket's type (none: a stream socket).
    func startSocketActivated(environment: [String] = [], arguments: [String] = [], socketType: String? = "--seqpacket") throws -> TestProcess {
        let settings = (["NOTIFY_SOCKET=\(manager.path)"] + environment).flatMap { ["-E", $0] }
        let daemon = try TestProcess([Self.socketActivate, "-l", socketPath] + (socketType.map { [$0] } ?? []) + ["--fdname=control"] + settings + voipd(arguments),
                                     output: logFile.rawValue)
        daemons.append(daemon)
        try waitForText("Listening on \(socketPath)", in: logPath)
        return daemon
    }

    /// voipd started as systemd starts it after a restart: `passing` as `$LISTEN_FDS`.
    func start(passing descriptors: [(name: String, descriptor: CInt)], environment: [String] = [], arguments: [String] = []) throws -> TestProcess {
        let daemon = try manager.start(voipd(arguments), passing: descriptors, environment: environment, output: logFile.rawValue)
        daemons.append(daemon)
        return daemon
    }

    /// SIGTERM, as `systemctl stop` sends, and its exit.
    func terminate(_ daemon: TestProcess) throws -> ProcessStatus {
        try daemon.pidfd.send(SIGTERM)
        return try daemon.waitForExit(.seconds(20))
    }

    /// Writes `apps.d/NAME.json`.
    func writeManifest(_ name: String, _ fields: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: fields, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: appsDirectory + "/\(name).json"))
    }

    /// A manifest that runs the test app, reporting to this rig.
    func writeTestAppManifest(_ name: String, _ extra: [String: Any] = [:]) throws {
        try writeManifest(name, ["command": Binaries.testApp, "arguments": ["--report", reports.path]].merging(extra) { $1 })
    }

    /// Waits for a test app (launched or relaunched) to connect its report channel and say hello.
    func acceptApp(_ name: String) throws -> TestAppHandle {
        let app = try reports.accept(name: name, timeout: .seconds(20))
        apps.append(app)
        _ = try app.expect(\.hello)
        return app
    }

    /// Waits until the event stream `follower` follows reports `app` reaching `state`.
    func waitForState(_ follower: VoipdControl, _ app: String, _ state: AppState) throws {
        let deadline = Deadline(.seconds(20))
        while let record = try follower.nextTransition(timeoutMilliseconds: deadline.remainingMilliseconds) {
            if record.app == app && record.to == state { return }
        }
        throw TimedOut(description: "\(app) did not reach \(state.rawValue); log:\n\(log)")
    }

    func stop() {
        // Every app a running voipd knows of, by pid: also those relaunched without ever
        // reaching the test (a failing test must not leave them stopped).
        if let control = try? VoipdControl(socketPath: socketPath) {
            for app in (try? control.status()) ?? [] {
                if let pid = app.pid, pid != getpid() {
                    kill(pid, SIGCONT)
                    kill(pid, SIGKILL)
                }
            }
        }
        for app in apps { app.stopProcesses() }
        for daemon in daemons { daemon.stop() }
        removeLegacyFreezerDirectory(socketPath: socketPath)
        // VOIPD_TEST_KEEP=1 keeps the directory (and the log) for a post-mortem.
        if getenv("VOIPD_TEST_KEEP") == nil { removeTree(directory) }
    }
}

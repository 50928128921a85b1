import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdConfiguration
import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// Held while a daemon made in this process exists (``withDaemonInProcess(adjust:_:)``).
private let inProcessDaemons = NSLock()

/// Runs `body` with a daemon made in this process (not started: a test drives its loop by
/// hand), its control socket in a fresh directory, suspending with SIGSTOP whatever the
/// machine offers. The process's signal mask and SIGCHLD action, which the daemon changes,
/// are put back afterwards, and the directory (with what the daemon wrote there) removed.
func withDaemonInProcess(adjust: (inout DaemonConfiguration) -> Void = { _ in }, _ body: (Daemon) throws -> Void) throws {
    // One at a time, whatever the suite: each daemon turns the kernel's stop reports on and
    // off in the process's SIGCHLD action while its apps are suspending, and every one puts
    // back at its end the action it found at its start. Two at once undid each other's (a
    // test that checks the action, StopsAwaitedTests, saw the other's), and competed for
    // the process's SIGCHLD.
    inProcessDaemons.lock()
    defer { inProcessDaemons.unlock() }
    var template = Array("/tmp/voipd-daemon-test.XXXXXX".utf8CString)
    let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
    var mask = sigset_t()
    pthread_sigmask(SIG_SETMASK, nil, &mask)
    var childAction = sigaction()
    sigaction(SIGCHLD, nil, &childAction)
    defer {
        sigaction(SIGCHLD, &childAction, nil)
        pthread_sigmask(SIG_SETMASK, &mask, nil)
        try? FileManager.default.removeItem(atPath: directory)
    }
    var configuration = DaemonConfiguration(socketPath: directory + "/voipd.sock")
    // SIGSTOP, whose stops the kernel reports, whatever the machine offers.
    configuration.suspension = .signal
    configuration.memoryPressureTrigger = nil
    configuration.appsDirectory = directory + "/apps.d"
    configuration.logLevel = .warning
    adjust(&configuration)
    try body(try Daemon(configuration: configuration))
}

/// An app made and started by `daemon` as a test's supervised program: a launchable app
/// (one that does not speak voipd's protocol) whose command is `command`, in the app table,
/// started in the foreground or the background. The test ends its process by pid.
func startedApp(_ daemon: Daemon, name: String = "phone", command: [String] = ["/bin/sleep", "600"],
                inBackground: Bool = false) throws -> AppRecord {
    let app = AppRecord(name: name, uid: geteuid(), lifecycle: daemon.newLifecycle(policy: AppPolicy(canLaunch: true, speaksProtocol: false)),
                        since: wallClockSeconds())
    app.launch = LaunchSpecification(LaunchCommand(arguments: command, environment: [], workingDirectory: nil))
    daemon.apps[app.id] = app
    try daemon.start(app, inBackground: inBackground, reason: "test")
    return app
}

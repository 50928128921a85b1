import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdLifecycle
import VoipdSystem

/// The stops voipd waits for are those of the apps in the `suspending` phase, and no other:
/// while none is awaited the kernel must not report children's stops and continues
/// (SA_NOCLDSTOP), or every wake would signal voipd as the woken app first runs.
///
/// A daemon in this process, never running its loop: the SIGCHLD that would confirm a stop
/// is never read, so an app stays `suspending` for as long as the test needs.
@Suite("Stops awaited", .serialized)
struct StopsAwaitedTests {
    @Test("a wake while the stop is not confirmed yet ends the wait: stop reports are off again")
    func wakeWhileSuspending() throws {
        try withSuspendingApp { daemon, app, peer in
            try peer.writeAll(Array("INVITE".utf8))
            let held = try #require(daemon.registry.sockets(of: app.id).first)
            daemon.heldSocketEvent(held, [.readable])
            #expect(app.lifecycle.phase == .background)
            #expect(daemon.apps.stopsAwaited.isEmpty)
            #expect(!Self.kernelReportsStops())
            daemon.feed(app, .killRequested)
        }
    }

    @Test("an app that dies while its stop is not confirmed yet ends the wait: stop reports are off again")
    func deathWhileSuspending() throws {
        try withSuspendingApp { daemon, app, _ in
            let process = try #require(app.process)
            try process.pidfd.send(SIGKILL)
        }
    }

    /// Runs `body` with an app (a `sleep` voipd started, which does not speak the protocol)
    /// sent to the background and stopped, the stop not yet confirmed; then ends the app if
    /// `body` did not, lets the daemon see the end, and checks that no stop is awaited.
    private func withSuspendingApp(_ body: (Daemon, AppRecord, borrowing FileDescriptor) throws -> Void) throws {
        var template = Array("/tmp/voipd-daemon-test.XXXXXX".utf8CString)
        let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
        var mask = sigset_t()
        pthread_sigmask(SIG_SETMASK, nil, &mask)
        var childAction = sigaction()
        sigaction(SIGCHLD, nil, &childAction)
        defer {
            sigaction(SIGCHLD, &childAction, nil)
            pthread_sigmask(SIG_SETMASK, &mask, nil)
            // The control socket and whatever the daemon wrote beside it (its state file).
            try? FileManager.default.removeItem(atPath: directory)
        }
        var configuration = DaemonConfiguration(socketPath: directory + "/voipd.sock")
        configuration.memoryPressureTrigger = nil
        configuration.appsDirectory = directory + "/apps.d"
        configuration.logLevel = .warning
        let daemon = try Daemon(configuration: configuration)
        let app = AppRecord(name: "phone", uid: geteuid(), lifecycle: daemon.newLifecycle(policy: AppPolicy(canLaunch: true, speaksProtocol: false)),
                            since: wallClockSeconds())
        app.launch = LaunchSpecification(LaunchCommand(arguments: ["/bin/sleep", "600"], environment: [], workingDirectory: nil))
        daemon.apps[app.id] = app
        try daemon.start(app, inBackground: false, reason: "test")
        let process = try #require(app.process)
        defer { if app.process != nil { _ = try? process.pidfd.send(SIGKILL); _ = try? process.pidfd.waitForExit() } }
        let pair = try Socket.pair()
        try daemon.hold(pair.first, app: app, name: "sip", kind: "unix-stream", origin: .registered)

        daemon.feed(app, .backgroundRequested)
        #expect(app.lifecycle.phase == .suspending)
        #expect(daemon.apps.stopsAwaited == [app.id])
        #expect(Self.kernelReportsStops())

        try body(daemon, app, pair.second)
        var ended = pollfd(fd: process.pidfd.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
        #expect(poll(&ended, 1, 20_000) == 1, "the app ends")
        daemon.processEvent(app)
        #expect(app.lifecycle.phase == .terminated)
        #expect(daemon.apps.stopsAwaited.isEmpty)
        #expect(!Self.kernelReportsStops(), "SIGCHLD is sent for stops and continues while no stop is awaited")
    }

    /// Whether this process's SIGCHLD disposition asks for stop and continue reports.
    static func kernelReportsStops() -> Bool {
        var action = sigaction()
        sigaction(SIGCHLD, nil, &action)
        return action.sa_flags & SA_NOCLDSTOP == 0
    }
}

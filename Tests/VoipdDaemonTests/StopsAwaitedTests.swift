import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdLifecycle
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

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

    /// The mounted cgroup v2 hierarchy, when this process may make cgroups in it.
    static var cgroupV2: CgroupMount? {
        guard geteuid() == 0 else { return nil }
        return CgroupTables.current()?.mounts.first { $0.version == .v2 }
    }

    @Test("a freeze not confirmed yet turns no stop reports on: a frozen app reports nothing, and a wake after it would signal voipd for nothing",
          .enabled(if: (cgroupV2 != nil && toolExists(SlowToFreeze.python)) || runningUnderCI, "needs root, a cgroup2 mount and python3"))
    func freezeAwaitedWithoutReports() throws {
        let mount = try #require(Self.cgroupV2)
        let directory = mount.mountPoint + "/voipd-daemon-test-\(getpid())"
        defer {
            // The app's cgroup once its last task has left (v2 says so in cgroup.events), then ours.
            let cgroup = directory + "/" + CgroupFreezer.cgroupName(forApp: "phone")
            if let events = try? openFile(cgroup + "/cgroup.events", flags: O_RDONLY) {
                let deadline = MonotonicInstant.now + .seconds(10)
                while (ProcFS.read(cgroup + "/cgroup.events") ?? "").contains("populated 1"), MonotonicInstant.now < deadline {
                    var watched = pollfd(fd: events.rawValue, events: Int16(POLLPRI), revents: 0)
                    _ = poll(&watched, 1, 100)
                }
            }
            rmdir(cgroup)
            #expect(rmdir(directory) == 0, "\(directory) left behind: \(Errno.current("rmdir"))")
        }
        let files = try makeTemporaryDirectory("voipd-daemon-test")
        defer { removeTree(files) }
        let marker = files + "/populating"
        try withSuspendingApp(SlowToFreeze.command(writing: marker), adjust: {
            $0.suspension = .freezer
            $0.cgroupDirectory = directory
        }, running: {
            let started = try waitForNonEmptyFile(marker, until: .now + .seconds(20))
            #expect(started, "the program's thread did not start")
        }) { daemon, app, _ in
            #expect(app.process?.cgroup != nil, "frozen, not stopped")
            // cgroup.kill: a frozen task dies at once.
            daemon.feed(app, .killRequested)
        }
    }

    /// Runs `body` with an app (a `sleep` voipd started, which does not speak the protocol,
    /// or `command`) sent to the background and stopped, the stop not yet confirmed; `body`
    /// ends the app; then the daemon sees the end, and no stop is awaited any more. Stop reports are on meanwhile for a child stopped with SIGSTOP, and only
    /// for one. `adjust` changes the configuration (SIGSTOP by default); `running` runs once
    /// the app has started, before it is sent to the background.
    private func withSuspendingApp(_ command: [String] = ["/bin/sleep", "600"], adjust: (inout DaemonConfiguration) -> Void = { _ in },
                                   running: () throws -> Void = {},
                                   _ body: (Daemon, AppRecord, borrowing FileDescriptor) throws -> Void) throws {
        try withDaemonInProcess(adjust: adjust) { daemon in
            let app = try startedApp(daemon, command: command)
            let process = try #require(app.process)
            defer { if app.process != nil { _ = try? process.pidfd.send(SIGKILL); _ = try? process.pidfd.waitForExit() } }
            let pair = try Socket.pair()
            try daemon.hold(pair.first, app: app, name: "sip", kind: "unix-stream", origin: .registered)

            try running()
            daemon.feed(app, .backgroundRequested)
            #expect(app.lifecycle.phase == .suspending)
            #expect(daemon.apps.stopsAwaited == [app.id])
            #expect(Self.kernelReportsStops() == process.stopsAreReported)

            try body(daemon, app, pair.second)
            var ended = pollfd(fd: process.pidfd.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
            #expect(poll(&ended, 1, 20_000) == 1, "the app ends")
            daemon.processEvent(app)
            #expect(app.lifecycle.phase == .terminated)
            #expect(daemon.apps.stopsAwaited.isEmpty)
            #expect(!Self.kernelReportsStops(), "SIGCHLD is sent for stops and continues while no stop is awaited")
        }
    }

    /// Whether this process's SIGCHLD disposition asks for stop and continue reports.
    static func kernelReportsStops() -> Bool {
        var action = sigaction()
        sigaction(SIGCHLD, nil, &action)
        return action.sa_flags & SA_NOCLDSTOP == 0
    }
}

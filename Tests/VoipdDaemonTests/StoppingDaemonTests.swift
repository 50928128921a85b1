import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// A voipd that has read SIGTERM starts nothing: what it launched then would outlive it,
/// unsupervised.
@Suite("A stopping voipd", .serialized)
struct StoppingDaemonTests {
    @Test("data for a dead app read in the turn that read SIGTERM asks for a relaunch: the app is not started, neither then nor by the shutdown that drains the relaunches queued")
    func noLaunchOnceStopping() throws {
        try withDaemonInProcess { daemon in
            let app = try startedApp(daemon)
            let pair = try Socket.pair()
            try daemon.hold(pair.first, app: app, name: "sip", kind: "unix-stream", origin: .registered)
            // Whatever this test's daemon started is ended by its pid.
            var started: [AppProcess] = []
            func note() { if let process = app.process, !started.contains(where: { $0 === process }) { started.append(process) } }
            defer {
                for process in started {
                    _ = try? process.pidfd.send(SIGKILL)
                    _ = try? process.pidfd.waitForExit()
                }
            }
            note()

            // It dies (once, quickly: a relaunch for data would come at once).
            let first = try #require(app.process)
            try first.pidfd.send(SIGKILL)
            var ended = pollfd(fd: first.pidfd.descriptor.rawValue, events: Int16(POLLIN), revents: 0)
            #expect(poll(&ended, 1, 20_000) == 1, "the app ends")
            daemon.processEvent(app)
            #expect(!app.lifecycle.phase.isAlive && app.process == nil)
            let held = try #require(daemon.registry.sockets(of: app.id).first)
            #expect(held.armed, "data would relaunch it")

            // SIGTERM read (as the loop's signal handling does), then, later in the same
            // turn, the held socket's data.
            daemon.running = false
            try pair.second.writeAll(Array("INVITE".utf8))
            daemon.heldSocketEvent(held, [.readable])
            note()
            #expect(app.process == nil, "started by a voipd that is stopping: pid \(app.process?.pid ?? 0)")
            #expect(daemon.apps.deferredStarts.isEmpty)

            daemon.shutDown()
            note()
            #expect(app.process == nil, "started by the shutdown: pid \(app.process?.pid ?? 0)")
            #expect(!app.lifecycle.phase.isAlive)
        }
    }
}

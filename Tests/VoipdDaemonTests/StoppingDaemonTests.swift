import Foundation
import Glibc
import Testing
@testable import VoipdDaemon
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
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

    @Test("a client's launch read in the turn that read SIGTERM is refused (launchFailed, \"voipd is stopping\"): no process started, no app left behind, the app that ran before left as it was; the shutdown starts nothing either")
    func launchRequestOnceStopping() throws {
        try withDaemonInProcess { daemon in
            // Another app, running: the shutdown leaves it running, as before.
            let running = try startedApp(daemon, name: "running")
            let runningProcess = try #require(running.process)
            defer { _ = try? runningProcess.pidfd.send(SIGKILL); _ = try? runningProcess.pidfd.waitForExit() }
            let peer = try Socket.connectUnix(path: daemon.configuration.socketPath)
            daemon.acceptClients()
            let client = try #require(daemon.clients.values.first)
            // Whatever this test's daemon started for the launch is ended by its pid.
            var started: [AppProcess] = []
            func note() {
                if let process = daemon.apps[AppID("late")]?.process, !started.contains(where: { $0 === process }) { started.append(process) }
            }
            defer {
                for process in started {
                    _ = try? process.pidfd.send(SIGKILL)
                    _ = try? process.pidfd.waitForExit()
                }
            }

            // SIGTERM read (as the loop's signal handling does), then, later in the same
            // turn, a client's launch: a command, and a name no app has yet.
            let codec = WireCodec()
            try peer.writeAll(try codec.packet(.launch, LaunchRequest(id: 9, name: "late", arguments: ["/bin/sleep", "600"])))
            daemon.running = false
            daemon.serviceClient(client, [.readable])
            note()
            #expect(daemon.apps[AppID("late")] == nil, "launched by a voipd that is stopping: pid \(daemon.apps[AppID("late")]?.process?.pid ?? 0)")
            guard try waitReadable(peer.rawValue, until: MonotonicInstant.now + .seconds(10)),
                  case .processed(.frame(let frame)) = try codec.receive(from: peer) else {
                Issue.record("no reply to the launch")
                return
            }
            let reply = try JSONDecoder().decode(Reply<EmptyResult>.self, from: Data(frame.body))
            #expect(reply.id == 9)
            #expect(reply.error == ProtocolError(.launchFailed, "voipd is stopping: late not started"))

            daemon.shutDown()
            note()
            #expect(daemon.apps[AppID("late")]?.process == nil, "started by the shutdown")
            #expect(running.process === runningProcess && ProcFS.state(of: runningProcess.pid).map { $0 != "T" && $0 != "Z" } == true,
                    "the app that ran before runs on, not stopped: \(ProcFS.state(of: runningProcess.pid).map { String($0) } ?? "gone")")
        }
    }

    @Test("once SIGTERM is read, start itself refuses, whatever its caller (a launch at start, a relaunch): the app is left as it was, not terminated with launchFailed")
    func startRefusesOnceStopping() throws {
        try withDaemonInProcess { daemon in
            let app = AppRecord(name: "phone", uid: geteuid(), lifecycle: daemon.newLifecycle(policy: AppPolicy(canLaunch: true, speaksProtocol: false)),
                                since: wallClockSeconds())
            app.launch = LaunchSpecification(LaunchCommand(arguments: ["/bin/sleep", "600"], environment: [], workingDirectory: nil))
            daemon.apps[app.id] = app
            let phase = app.lifecycle.phase
            daemon.running = false
            #expect(throws: ProtocolError(.launchFailed, "voipd is stopping: phone not started")) {
                try daemon.start(app, inBackground: true, reason: "test")
            }
            if let process = app.process {
                _ = try? process.pidfd.send(SIGKILL)
                _ = try? process.pidfd.waitForExit()
                Issue.record("started pid \(process.pid) once stopping")
            }
            #expect(app.lifecycle.phase == phase && app.lifecycle.terminationReason == nil)
        }
    }
}

import Foundation
import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A softphone stopped with SIGSTOP, refreshing its registration in its keep-alive handler,
/// kept stopped across voipd's crash and restart: the new voipd must go on waking it, or its
/// registration lapses and no INVITE reaches it again.
@Suite("Stopped survivors across a restart: their keep-alive", .serialized)
final class StoppedSurvivorKeepAliveTests {
    let rig: ServiceRig

    init() throws { rig = try ServiceRig() }

    deinit { rig.stop() }

    @Test("voipd killed with an app stopped by SIGSTOP that has a keep-alive: the next voipd, with the state file alone, keeps it stopped with its keep-alive; with no data at all, the keep-alive wakes it, it connects again, its handler runs, and it is stopped again")
    func keptStoppedKeepsItsKeepAlive() throws {
        try withKeptStoppedApp(["--timing", "keepAliveMinimum=2"]) { app, second in
            let (commands2, follower2) = try RestartRecoveryTests.controls(rig)
            #expect(try commands2.app("phone").keepAliveSeconds == 80, "the keep-alive taken back with the process")

            try RestartRecoveryTests.expectWokenByKeepAliveOnly(app, "phone", commands2, follower2)
            #expect(processState(app.pid) == "T")
            #expect(try rig.terminate(second) == .exited(0))
            #expect(processState(app.pid) != "T", "continued as voipd stops")
        }
    }

    @Test("a SIGHUP that raises keepAliveMinimum above a kept-stopped survivor's keep-alive: voipd raises it, and the state file and the service manager's store record the raised interval, which a voipd started after this one dies goes on with")
    func raisedMinimumIsRecorded() throws {
        let configuration = rig.directory + "/keep-alive.json"
        // The file's timings are not scaled: 2 s, then 60 s, against the app's 80 s (8 s at the
        // rig's scale). Raised, its next keep-alive is 60 s away: nothing else writes the
        // state file meanwhile (the stopped app cannot reconnect).
        func setMinimum(_ seconds: Int) throws {
            try Data(#"{"suspension": "signal", "timings": {"keepAliveMinimum": \#(seconds)}}"#.utf8).write(to: URL(fileURLWithPath: configuration))
        }
        try setMinimum(2)
        try withKeptStoppedApp(["--config", configuration]) { app, second in
            let (commands2, _) = try RestartRecoveryTests.controls(rig)
            #expect(try commands2.app("phone").keepAliveSeconds == 80)

            try setMinimum(60)
            #expect(kill(second.pid, SIGHUP) == 0)
            try waitForText("phone: keep-alive raised from 80 s to 600 s", in: rig.logPath)
            #expect(try commands2.app("phone").keepAliveSeconds == 600)
            let statePath = rig.directory + "/voipd.state"
            let recorded = try waitForContent(of: statePath, until: MonotonicInstant.now + .seconds(20)) { Self.recordedInterval(ofStateFile: $0) == .seconds(60) }
            #expect(recorded, "the state file still records \(Self.recordedInterval(ofStateFile: ProcFS.read(statePath) ?? "").map { "\($0)" } ?? "nothing")")
            // Stored in the same turn as the state file was marked for writing, so it has arrived.
            try rig.manager.receiveWaiting()
            let stored = try #require(rig.manager.store.last { $0.name == "phone/#record" }, "the app's record is in the store")
            let record = try JSONDecoder().decode(Record.self, from: Data((ProcFS.read("/proc/self/fd/\(stored.descriptor.rawValue)") ?? "").utf8))
            #expect(record.keepAlive?.interval == .seconds(60), "the store's record: \(record)")
        }
    }

    /// An app of the rig's with an 80 s keep-alive (8 s at the rig's time scale 0.1: long
    /// enough that the first voipd does not wake it between its stop and the crash), stopped
    /// with SIGSTOP by a voipd of `arguments` that is then killed; `body` gets it and the next
    /// voipd (the state file alone), which has kept it stopped.
    func withKeptStoppedApp(_ arguments: [String], _ body: (TestAppHandle, TestProcess) throws -> Void) throws {
        let peer = try TCPPeer()
        let listener = try Socket.listenUnix(path: rig.socketPath)
        let control = [("control", listener.rawValue)]
        let first = try RestartRecoveryTests.start(rig, passing: control, arguments: arguments)
        let (commands, follower) = try RestartRecoveryTests.controls(rig)
        let (app, _) = try RestartRecoveryTests.launch(rig, commands, "phone", sockets: ["sip"], peer: peer)
        try app.send(.keepAlive(seconds: 80))
        try app.expect(.keepAliveSet)
        try RestartRecoveryTests.suspend("phone", commands, follower)
        #expect(processState(app.pid) == "T")

        try RestartRecoveryTests.crash(first)
        #expect(processState(app.pid) == "T", "left stopped by the crash")
        let second = try RestartRecoveryTests.start(rig, passing: control, arguments: arguments)
        #expect(rig.log.contains("phone: pid \(app.pid) still running from before voipd started, stopped: kept stopped"), "\(rig.log)")
        try body(app, second)
    }

    /// What the test reads of an app's record (the store's `APP/#record`, the state file's `record`).
    struct Record: Decodable {
        struct KeepAlive: Decodable { var interval: Duration }
        var keepAlive: KeepAlive?
    }

    /// The keep-alive interval the state file records for `phone`.
    static func recordedInterval(ofStateFile text: String) -> Duration? {
        struct StateFile: Decodable {
            struct App: Decodable { var name: String; var record: Record }
            var apps: [App]
        }
        return (try? JSONDecoder().decode(StateFile.self, from: Data(text.utf8)))?.apps.first { $0.name == "phone" }?.record.keepAlive?.interval
    }
}

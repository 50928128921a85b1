import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// An app voipd suspended with SIGSTOP, and voipd killed (issue 14: a restarted voipd
/// keeps or resumes what it finds as its records say). The next voipd keeps the app stopped
/// when it gets back every VoIP socket the state file lists for it (from the service
/// manager's store, or copied from the app's own descriptors by inode), and resumes it when
/// it cannot: an app stopped with a socket nobody watches would miss its calls.
@Suite("Stopped survivors across a restart", .serialized)
final class StoppedSurvivorTests {
    let rig: ServiceRig

    init() throws { rig = try ServiceRig() }

    deinit { rig.stop() }

    /// Where the socket comes back from, and what resumes the app first.
    enum Restart: String, CaseIterable, CustomTestStringConvertible {
        /// Copied from the app by inode (the state file alone); data on it wakes the app.
        case stateFileThenData
        /// From the service manager's store; someone else's SIGCONT resumes the app, which
        /// voipd notices and undoes, as it did before the restart.
        case storeThenStrayContinue
        var testDescription: String { rawValue }
    }

    @Test("voipd killed with an app stopped by SIGSTOP: the next voipd gets its socket back (copied from the app by inode with the state file alone, or from the store), keeps it stopped (no thread runs), and data wakes it or a stray SIGCONT is noticed and undone; the app reconnects and finds its own socket held",
          arguments: Restart.allCases)
    func keptStopped(_ restart: Restart) throws {
        let withStore = restart == .storeThenStrayContinue
        let peer = try TCPPeer()
        let listener = try Socket.listenUnix(path: rig.socketPath)
        let control = [("control", listener.rawValue)]
        let first = try RestartRecoveryTests.start(rig, passing: control)
        let (commands, follower) = try RestartRecoveryTests.controls(rig)
        let (app, remotes) = try RestartRecoveryTests.launch(rig, commands, "phone", sockets: ["sip"], peer: peer)
        try RestartRecoveryTests.suspend("phone", commands, follower)
        #expect(processState(app.pid) == "T")
        // The state file lists the socket by its inode, written before the stop.
        let written = try PlantedStateFile.read(rig.directory + "/voipd.state")
        let entry = try #require((written["apps"] as? [[String: Any]])?.first { $0["name"] as? String == "phone" })
        let sockets = try #require(entry["sockets"] as? [[String: Any]], "\(entry)")
        #expect(sockets.map { $0["name"] as? String } == ["sip"])
        #expect((sockets.first?["inode"] as? Int ?? 0) > 0)
        if withStore {
            for name in ["phone/#process", "phone/sip"] {
                try rig.manager.expect("FDSTORE=1 of \(name)", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == name }
            }
        }
        let ranBefore = cpuNanoseconds(ofProcess: app.pid)

        try RestartRecoveryTests.crash(first)
        let stored = withStore ? rig.manager.store.map { ($0.name, $0.descriptor.rawValue) } : []
        let second = try RestartRecoveryTests.start(rig, passing: control + stored)
        #expect(rig.log.contains("phone: pid \(app.pid) still running from before voipd started, stopped: kept stopped; its 1 held sockets wake it"), "\(rig.log)")
        #expect(rig.log.contains("phone: holding VoIP sockets sip again, copied from its processes") == !withStore, "\(rig.log)")
        let (commands2, follower2) = try RestartRecoveryTests.controls(rig)
        let status = try commands2.app("phone")
        #expect(status.state == .suspended && status.pid == app.pid && status.suspension == "SIGSTOP")
        #expect(try commands2.sockets("phone").map(\.name) == ["sip"])
        #expect(processState(app.pid) == "T", "never continued")
        #expect(cpuNanoseconds(ofProcess: app.pid) == ranBefore, "a thread of the app ran across the restart")

        switch restart {
        case .stateFileThenData:
            // It finds voipd gone, connects to the new one, and is told.
            try remotes["sip"]!.write("INVITE after the restart")
        case .storeThenStrayContinue:
            // As a shell's `kill -CONT` would: the app runs behind voipd's back.
            #expect(try runToEnd(["/bin/kill", "-CONT", "\(app.pid)"]) == .exited(0))
        }
        try app.expect(.disconnected)
        let back = try app.expect(\.reconnection)
        #expect(back.pid == app.pid, "the same process, not a relaunch")
        #expect(back.registered == ["sip"] && back.restored == [], "its own socket, held again: \(back)")
        #expect(!app.history.contains { if case .registrationRefused = $0 { true } else { false } })
        // Registered once, with the first voipd.
        #expect(rig.log.components(separatedBy: "phone: holding VoIP socket sip (tcp)\n").count == 2, "\(rig.log)")
        switch restart {
        case .stateFileThenData:
            #expect(try app.expectRead("sip") == .data("INVITE after the restart"))
        case .storeThenStrayContinue:
            // The evidence taken when the app was kept stopped shows the resume at status.
            _ = try commands2.app("phone")
            #expect(rig.log.contains("phone: pid \(app.pid) resumed by someone else"), "\(rig.log.suffix(2000))")
            try waitUntil("pid \(app.pid) is stopped again") { processState(app.pid) == "T" }
            try remotes["sip"]!.write("INVITE after the restart")
            _ = try app.expectEvent(.voipSocketReadable)
            #expect(try app.expectRead("sip") == .data("INVITE after the restart"))
        }
        try commands2.waitUntil("phone", is: .suspended, follower: follower2)
        #expect(processState(app.pid) == "T")
        #expect(try commands2.app("phone").launches == 0, "taken back, never launched by this voipd")
        #expect(try rig.terminate(second) == .exited(0))
        #expect(processState(app.pid) != "T", "continued as voipd stops")
    }

    @Test("a stopped process whose listed VoIP socket it no longer holds (the inode names none of its descriptors) is resumed: nothing would wake it",
          .enabled(if: getuid() == 0, "needs root (the planted state file is root's)"))
    func resumedWithoutItsSocket() throws {
        let decoy = try StoppedDecoy()
        defer { decoy.process.stop() }
        var entry = PlantedStateFile.app("decoy", pid: decoy.pid, startTime: decoy.startTime, uid: 0)
        entry["sockets"] = [["name": "sip", "kind": "tcp", "origin": "registered", "inode": 1]]
        let (voipd, _) = try PlantedStateFile.startVoipd(rig, with: [entry])
        #expect(rig.log.contains("decoy: pid \(decoy.pid) was left suspended, but voipd could not get back its VoIP sockets sip: resumed, to register them again"), "\(rig.log)")
        #expect(rig.log.contains("decoy: pid \(decoy.pid) still running from before voipd started; it was stopped: resumed"), "\(rig.log)")
        #expect(!decoy.isStopped)
        _ = try rig.terminate(voipd)
    }
}

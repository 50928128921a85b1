import Glibc
import Testing
import VoipClient
import VoipdSystem
import VoipdTestSupport

/// voipd under systemd's protocols, played with systemd's own tool (`systemd-socket-activate`)
/// and a stand-in for the service manager's end of sd_notify and the fd store: socket
/// activation, READY=1, STATUS=, WATCHDOG=1, STOPPING=1, FDSTORE=1 and FDSTOREREMOVE=1,
/// and VoIP sockets that survive a restart of voipd.
@Suite("systemd integration", .serialized)
final class SystemdIntegrationTests {
    /// Each test's own rig (Swift Testing makes a new suite instance for every test): a test
    /// here uses it rather than making another.
    let rig: ServiceRig

    init() throws { rig = try ServiceRig() }

    deinit { rig.stop() }

    static let toolMissing: Comment = "needs \(ServiceRig.socketActivate) (apt-get install systemd; with CI=true its absence is a failure)"

    @Test("systemd-socket-activate hands voipd its control socket; voipctl and apps reach voipd through it; READY=1, STATUS=, WATCHDOG=1, STOPPING=1",
          .enabled(if: toolAvailableOrCI(ServiceRig.socketActivate), toolMissing))
    func socketActivation() throws {
        try #require(toolExists(ServiceRig.socketActivate), "\(ServiceRig.socketActivate) is missing")
        // WATCHDOG_USEC as systemd sets it for WatchdogSec=: pings every 100 ms.
        let voipd = try rig.startSocketActivated(environment: ["WATCHDOG_USEC=200000"])

        // The tool execs voipd at the first connection: voipctl's, queued meanwhile.
        let status = try runCommand([Binaries.voipctl, "--socket", rig.socketPath, "status"])
        #expect(status.status == 0, "voipctl status through the activated socket: \(status.output)\n\(rig.log)")
        let ready = try rig.manager.expect("READY=1", context: rig.log)
        #expect(ready["MAINPID"] == "\(voipd.pid)", "the tool execs voipd: the pid it started is voipd's")
        #expect(ready["STATUS"]?.hasPrefix("0 apps running") == true, "STATUS=\(ready["STATUS"] ?? "")")
        #expect(rig.log.contains("control socket passed by the service manager (socket activation)"))
        try rig.manager.expect("WATCHDOG=1", timeout: .seconds(5), context: rig.log)
        try rig.manager.expect("WATCHDOG=1", timeout: .seconds(5), context: rig.log)

        // An app voipd launches reaches it through the same socket ($VOIPD_SOCKET).
        let control = try VoipdControl(socketPath: rig.socketPath)
        _ = try control.launch([Binaries.testApp, "--report", rig.reports.path], name: "phone")
        let app = try rig.acceptApp("phone")
        #expect(try control.app("phone").connected)
        // STATUS= follows the change, within a second.
        try rig.manager.expect("STATUS= with one app running", context: rig.log) { $0["STATUS"]?.hasPrefix("1 apps running") == true }

        #expect(try rig.terminate(voipd) == .exited(0), "\(rig.log)")
        let stopping = try rig.manager.expect("STOPPING=1", context: rig.log)
        #expect(stopping["STATUS"] != nil)
        // The app was told: its connection closed (the test app then exits).
        try app.expect(.disconnected)
    }

    @Test("a registered VoIP socket goes to the fd store (FDSTORE=1, FDNAME=APP/NAME); passed back in LISTEN_FDS after a restart it is held again, and the relaunched app reads what arrived while voipd was down",
          .enabled(if: toolAvailableOrCI(ServiceRig.socketActivate), toolMissing))
    func fdStoreAcrossRestart() throws {
        try #require(toolExists(ServiceRig.socketActivate), "\(ServiceRig.socketActivate) is missing")
        let peer = try TCPPeer()
        // It keeps a wake open (no acknowledgement) until the test has seen what it wants,
        // and exits when voipd goes (instead of reconnecting), to be relaunched by data.
        try rig.writeTestAppManifest("phone", ["arguments": ["--report", rig.reports.path, "--no-ack", "voipSocketReadable", "--no-reconnect"]])

        // First run: socket-activated, with a watchdog.
        let first = try rig.startSocketActivated(environment: ["WATCHDOG_USEC=200000"])
        let control = try VoipdControl(socketPath: rig.socketPath)
        let follower = try VoipdControl(socketPath: rig.socketPath)
        _ = try follower.events(follow: true)
        try rig.manager.expect("READY=1", context: rig.log)
        _ = try control.launchManifest("phone")
        let app = try rig.acceptApp("phone")
        let remote = try app.registerVoIPSocket("sip", connectedTo: peer)

        let stored = try rig.manager.expect("FDSTORE=1 of phone/sip", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/sip" }
        #expect(stored["FDNAME"] == "phone/sip")
        // Beside the socket, the app's record (phone/#record) and process (phone/#process).
        let entry = try #require(rig.manager.store.first { $0.name == "phone/sip" }, "FDSTORE=1 came without a descriptor")
        #expect(rig.manager.store.filter { !$0.name.contains("#") }.count == 1)
        #expect(try remotePort(entry.descriptor.rawValue) == peer.port, "the stored descriptor is the app's connection to the peer")

        // Suspended, then voipd stops (systemctl stop): it resumes the app, whose
        // connection to voipd closes; the test app then exits.
        try control.command(.background, "phone")
        try rig.waitForState(follower, "phone", .suspended)
        let oldApp = try PidFd(pid: app.pid)
        #expect(try rig.terminate(first) == .exited(0), "\(rig.log)")
        try rig.manager.expect("STOPPING=1", context: rig.log)
        try app.expect(.disconnected)
        #expect(waitReadable(oldApp.descriptor.rawValue, Deadline(.seconds(20))), "the old app did not exit")

        // While no voipd runs, the peer calls.
        let invite = "INVITE sip:phone@voipd.invalid SIP/2.0\r\nContent-Length: 0\r\n\r\n"
        try remote.write(invite)

        // Second run, as systemd starts it again: the control socket (systemd keeps it
        // bound: here a new one) and the fd store's descriptors, named, from 3 on.
        let listener = try Socket.listenUnix(path: rig.socketPath)
        let second = try rig.start(passing: [("control", listener.rawValue)] + rig.manager.store.map { ($0.name, $0.descriptor.rawValue) })
        let ready = try rig.manager.expect("READY=1", context: rig.log)
        #expect(ready["MAINPID"] == "\(second.pid)")
        let control2 = try VoipdControl(socketPath: rig.socketPath)
        let follower2 = try VoipdControl(socketPath: rig.socketPath)
        _ = try follower2.events(follow: true)
        #expect(rig.log.contains("phone: holding VoIP socket sip (tcp) again, from the service manager's store"), "\(rig.log)")

        // The data relaunches the app (its manifest says how), with its socket handed back.
        let relaunched = try rig.acceptApp("phone")
        #expect(relaunched.hello?.restored == ["sip"])
        let wake = try relaunched.expectEvent(.voipSocketReadable)
        #expect(wake.socket?.name == "sip")
        #expect(wake.socket?.bytesAvailable == invite.utf8.count)
        #expect(try relaunched.expectRead("sip") == .data(invite))
        // And the connection still works both ways.
        try relaunched.send(.write(socket: "sip", data: "SIP/2.0 180 Ringing"))
        #expect(try remote.read() == "SIP/2.0 180 Ringing")
        try relaunched.send(.acknowledge(eventID: wake.id))
        try rig.waitForState(follower2, "phone", .suspended)

        let sockets = try runCommand([Binaries.voipctl, "--socket", rig.socketPath, "sockets"])
        #expect(sockets.status == 0)
        #expect(sockets.output.split(separator: "\n").contains { $0.hasPrefix("phone") && $0.contains("sip") && $0.contains("tcp") },
                "voipctl sockets: \(sockets.output)")

        // Held again from the store, it is not stored twice; released, it leaves the store.
        try rig.manager.receiveWaiting()
        #expect(rig.manager.messages.filter { $0.has("FDSTORE=1") && $0["FDNAME"] == "phone/sip" }.count == 1)
        try control2.command(.foreground, "phone")
        try relaunched.send(.unregister(socket: "sip"))
        try relaunched.expect(.unregistered(socket: "sip"))
        let removed = try rig.manager.expect("FDSTOREREMOVE=1 of phone/sip", context: rig.log) { $0.has("FDSTOREREMOVE=1") && $0["FDNAME"] == "phone/sip" }
        #expect(removed["FDNAME"] == "phone/sip")
        #expect(!rig.manager.store.contains { $0.name == "phone/sip" })
        #expect(try rig.terminate(second) == .exited(0))
    }

    @Test("after voipd crashes with an app suspended, the next voipd resumes it for the data waiting on its socket (the store kept its process and socket; no second copy is launched for the data) and knows whose the app is and how to start it",
          .enabled(if: toolAvailableOrCI(ServiceRig.socketActivate), toolMissing))
    func crashLeavesNothingStopped() throws {
        let peer = try TCPPeer()
        let listener = try Socket.listenUnix(path: rig.socketPath)
        let first = try rig.start(passing: [("control", listener.rawValue)])
        try rig.manager.expect("READY=1", context: rig.log)
        let control = try VoipdControl(socketPath: rig.socketPath)
        let follower = try VoipdControl(socketPath: rig.socketPath)
        _ = try follower.events(follow: true)
        // Launched with a command line, no manifest: only the stored record says how to start it.
        // It leaves its socket's data for the test to ask for (so the data relaunches it), and
        // exits when its connection to voipd closes instead of reconnecting.
        _ = try control.launch([Binaries.testApp, "--report", rig.reports.path, "--no-read", "--no-reconnect"], name: "phone")
        let app = try rig.acceptApp("phone")
        let remote = try app.registerVoIPSocket("sip", connectedTo: peer)
        try control.command(.background, "phone")
        try rig.waitForState(follower, "phone", .suspended)
        for name in ["phone/#record", "phone/#process", "phone/sip"] {
            try rig.manager.expect("FDSTORE=1 of \(name)", context: rig.log) { $0.has("FDSTORE=1") && $0["FDNAME"] == name }
        }

        // voipd crashes: nothing resumes the app.
        try first.pidfd.send(SIGKILL)
        _ = try first.waitForExit(.seconds(10))
        #expect(processState(app.pid) == "T", "left stopped by the crash")
        try remote.write("INVITE")

        // The next voipd gets the store back: the data waiting on the app's socket is for
        // the app's process, which it resumes at once…
        let second = try rig.start(passing: [("control", listener.rawValue)] + rig.manager.store.map { ($0.name, $0.descriptor.rawValue) })
        try rig.manager.expect("READY=1", context: rig.log)
        #expect(rig.log.contains("phone: pid \(app.pid) still running from before voipd started; it was stopped: resumed"), "\(rig.log)")
        // …which finds its connection to the old voipd gone and exits.
        try app.expect(.disconnected)
        // Its record made it known: owned by this uid, started from its command line again by the data.
        let relaunched = try rig.acceptApp("phone")
        let wake = try relaunched.expectEvent(.voipSocketReadable)
        #expect(wake.socket?.name == "sip")
        let status = try VoipdControl(socketPath: rig.socketPath).app("phone")
        #expect(status.uid == getuid())
        #expect(status.launchedByVoipd)
        _ = try rig.terminate(second)
    }

    /// A `ListenStream=` or `ListenDatagram=` socket unit used to be accepted, and every
    /// client then failed with EPROTOTYPE. Now voipd refuses it at start, as a configuration
    /// error (exit 78), naming the directive the unit needs.
    @Test("a control socket of the wrong type stops voipd with exit 78, naming ListenSequentialPacket=",
          .enabled(if: toolAvailableOrCI(ServiceRig.socketActivate), toolMissing),
          arguments: [(nil, Socket.streamType), ("--datagram", Socket.datagramType)] as [(String?, CInt)])
    func wrongSocketType(option: String?, type: CInt) throws {
        try #require(toolExists(ServiceRig.socketActivate), "\(ServiceRig.socketActivate) is missing")
        let voipd = try rig.startSocketActivated(socketType: option)
        // The tool starts voipd at the first connection (or datagram) of the socket's own type.
        let trigger = try Socket.make(domain: AF_UNIX, type: type)
        if type == Socket.datagramType {
            _ = try Socket.withUnixAddress(rig.socketPath) { address, length in
                try valueOrErrno("sendto") { sendto(trigger.rawValue, "x", 1, 0, address, length) }
            }
        } else {
            _ = try Socket.withUnixAddress(rig.socketPath) { address, length in
                try valueOrErrno("connect") { connect(trigger.rawValue, address, length) }
            }
        }
        #expect(try voipd.waitForExit(.seconds(20)) == .exited(78), "\(rig.log)")
        #expect(rig.log.contains("ListenSequentialPacket="), "\(rig.log)")
    }

    @Test("a socket-activated voipd leaves the service manager's socket path in place when it stops")
    func activatedSocketPathSurvivesStop() throws {
        // Bound by the service manager (the socket unit), which keeps it across restarts.
        let listener = try Socket.listenUnix(path: rig.socketPath)
        let voipd = try rig.start(passing: [("control", listener.rawValue)])
        try rig.manager.expect("READY=1", context: rig.log)
        #expect(try rig.terminate(voipd) == .exited(0))
        // The path is the socket unit's: a client connecting now waits in its backlog for
        // the next voipd (and starts it, under systemd).
        #expect(access(rig.socketPath, F_OK) == 0, "the path of the socket the service manager still listens on is gone")
        #expect((try? Socket.connectUnix(path: rig.socketPath)) != nil)
    }

    @Test("apps learn the path of the socket the service manager passed, even when voipd's configured path differs")
    func appsGetTheActivatedPath() throws {
        let listener = try Socket.listenUnix(path: rig.socketPath)
        // The configuration names another path (e.g. voipd.json and voipd.socket disagree).
        let voipd = try rig.start(passing: [("control", listener.rawValue)], arguments: ["--socket", rig.directory + "/configured.sock"])
        try rig.manager.expect("READY=1", context: rig.log)
        let control = try VoipdControl(socketPath: rig.socketPath)
        _ = try control.launch([Binaries.testApp, "--report", rig.reports.path], name: "phone")
        let app = try rig.reports.accept(name: "phone", timeout: .seconds(20))
        defer { app.stopProcesses() }
        let first = try app.expect { $0.hello != nil || $0.errorMessage != nil }
        #expect(first.hello != nil, "the app could not connect: \(first)")
        _ = try rig.terminate(voipd)
    }
}

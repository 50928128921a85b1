import Glibc
import Testing
import VoipClient
import VoipdSystem

/// The core of the product (TN2277's VoIP sockets): suspended in the background, woken by
/// data on a held socket, sockets kept across crash and relaunch.
@Suite("Wake path", .serialized)
final class WakePathTests: DaemonSuite {
    @Test("background suspends the app (state T); data on its VoIP socket wakes it; it reads the bytes itself")
    func suspendAndWake() throws {
        // It keeps the wake open (no ack) so the test can see it running.
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone", ["--no-ack", "voipSocketReadable"])
        try harness.suspend(app)
        #expect(processState(app.pid) == "T")
        #expect(try harness.status("phone").state == .suspended)
        #expect(try harness.control.sockets("phone").map(\.watching) == [true])

        let invite = "INVITE sip:phone@voipd.invalid SIP/2.0\r\nContent-Length: 0\r\n\r\n"
        try remote.write(invite)
        let event = try app.expectEvent(.voipSocketReadable)
        #expect(event.socket?.name == "sip")
        #expect(event.socket?.bytesAvailable == invite.utf8.count)
        #expect(event.socket?.peerClosed == false)
        #expect(try app.expectRead("sip") == .data(invite))
        // Unacknowledged, the wake is still in progress: the app runs, in the background.
        #expect(processState(app.pid) != "T")
        #expect(try harness.status("phone").state == .background)
        #expect(try harness.status("phone").wakes == 1)

        try app.send(.acknowledge(eventID: event.id))
        try harness.waitForState("phone", .suspended)
        #expect(processState(app.pid) == "T")
        // The daemon never read the data: nothing of it is left, and it was the app that read it.
        #expect(try harness.control.sockets("phone").first?.bytesAvailable == 0)
        // The wake, from the data seen to the acknowledgement, is in the latency histogram.
        let stats = try harness.control.stats()
        #expect(stats.contains("voipd_wake_latency_seconds_count 1"))
        #expect(stats.contains("voipd_wake_latency_seconds_bucket{le=\"+Inf\"} 1"))
        #expect(stats.contains("voipd_wakes_total 1"))
    }

    @Test("foreground resumes the app and stops watching its sockets; it reads them itself")
    func foregroundDisarms() throws {
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        try harness.suspend(app)
        try harness.control.command(.foreground, "phone")
        try app.expectEvent(.willEnterForeground)
        try app.expectEvent(.didBecomeActive)
        try harness.waitForState("phone", .active)
        #expect(processState(app.pid) != "T")
        #expect(try harness.control.sockets("phone").map(\.watching) == [false])

        try remote.write("OPTIONS")
        #expect(try app.expectRead("sip") == .data("OPTIONS"))
        #expect(try harness.status("phone").wakes == 0)
        #expect(!app.received(.voipSocketReadable))
    }

    @Test("data that arrives after the app's last look, before it is stopped, still wakes it")
    func noLostWakeUp() throws {
        // The app neither reads on its own nor acknowledges didEnterBackground or the wake
        // by itself: the test does, when it has seen what it wants.
        let (app, remote) = try harness.launchAppWithVoIPSocket(
            "phone", ["--no-read", "--no-ack", "didEnterBackground", "--no-ack", "voipSocketReadable"])
        try harness.control.command(.background, "phone")
        let entered = try app.expectEvent(.didEnterBackground)
        try remote.write("late")
        // Acknowledged only now: the data is already there when the daemon arms and stops.
        try app.send(.acknowledge(eventID: entered.id))
        let event = try app.expectEvent(.voipSocketReadable)
        #expect(event.socket?.bytesAvailable == 4)
        try app.send(.read(socket: "sip"))
        #expect(try app.expectRead("sip") == .data("late"))
        try app.send(.acknowledge(eventID: event.id))
        try harness.waitForState("phone", .suspended)
        #expect(processState(app.pid) == "T")
    }

    @Test("held sockets survive a crash; relaunched under the same name the app gets them back with the data that arrived meanwhile")
    func socketsSurviveCrashAndManualRelaunch() throws {
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone", relaunchOnData: false)
        try harness.suspend(app)
        kill(app.pid, SIGKILL)
        let ended = try harness.waitForState("phone", .terminated)
        #expect(ended.reason.contains("SIGKILL"))
        #expect(try harness.status("phone").voipSockets == 1)

        try remote.write("while you were dead")
        try remote.waitUntilAcknowledged()
        #expect(try harness.control.sockets("phone").first?.bytesAvailable == 19)
        let again = try harness.launchTestApp("phone")
        #expect(again.hello?.restored == ["sip"])
        #expect(try again.expectRead("sip") == .data("while you were dead"))
        // And the connection still works both ways.
        try again.send(.write(socket: "sip", data: "SIP/2.0 200 OK"))
        let answer = try remote.read()
        #expect(answer == "SIP/2.0 200 OK")
    }

    @Test("data for a suspended app that was killed relaunches it in the background; sockets come before the event")
    func relaunchOnData() throws {
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        try harness.suspend(app)
        kill(app.pid, SIGKILL)
        try harness.waitForState("phone", .terminated)

        try remote.write("INVITE")
        let relaunched = try harness.acceptApp("phone")
        #expect(relaunched.hello?.restored == ["sip"])
        #expect(relaunched.hello?.state == .background)
        let event = try relaunched.expectEvent(.voipSocketReadable)
        #expect(event.socket?.name == "sip")
        #expect(try relaunched.expectRead("sip") == .data("INVITE"))
        try harness.waitForState("phone", .suspended)
        #expect(processState(relaunched.pid) == "T")
        #expect(try harness.status("phone").launches == 2)
    }

    @Test("an app retrieves a duplicate of its held socket and can unregister it")
    func retrieveAndUnregister() throws {
        let (app, _) = try harness.launchAppWithVoIPSocket("phone")
        try app.send(.retrieve(socket: "sip"))
        #expect(try app.expect(\.retrievedSameSocket) == true)
        try app.send(.unregister(socket: "sip"))
        try app.expect(.unregistered(socket: "sip"))
        #expect(try harness.control.sockets("phone").isEmpty)
        try app.send(.retrieve(socket: "sip"))
        let message = try app.expect(\.errorMessage)
        #expect(message.contains("noSuchSocket"), "\(message)")
    }

    @Test("the app may close its own copy: the held one still wakes it and can be retrieved")
    func appClosesItsCopy() throws {
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone")
        try app.send(.closeOwn(socket: "sip"))
        try app.expect(.closed(socket: "sip"))
        try harness.suspend(app)
        try remote.write("ring")
        let event = try app.expectEvent(.voipSocketReadable)
        #expect(event.socket?.bytesAvailable == 4)
        try harness.waitForState("phone", .suspended)
        #expect(try harness.control.sockets("phone").first?.bytesAvailable == 4)
    }

    @Test("SIGTERM stops voipd without leaving any app stopped")
    func shutdownResumes() throws {
        let (app, _) = try harness.launchAppWithVoIPSocket("phone")
        try harness.suspend(app)
        #expect(processState(app.pid) == "T")
        try harness.daemon.pidfd.send(SIGTERM)
        let status = try harness.daemon.waitForExit(.seconds(10))
        #expect(status == .exited(0))
        #expect(processState(app.pid) != "T")
        #expect(processState(app.pid) != nil)
    }

    /// Issue 8: under a flood of control requests, wakes waited behind them. A held socket's
    /// readiness is now served before the control requests of the same turn. Made
    /// deterministic by stopping voipd itself: a status request arrives first, then the call;
    /// when voipd continues, both are ready, and the status reply already sees the app woken.
    @Test("a held socket's readiness is served before control requests that arrived first")
    func wakeBeforeControlRequests() throws {
        let (app, remote) = try harness.launchAppWithVoIPSocket("phone", ["--no-ack", "voipSocketReadable"])
        try harness.suspend(app)
        let controller = try RawClient(socketPath: harness.socketPath)
        // Accepted and watched before voipd stops (an answer proves it).
        try controller.request(type: 17, #"{"id": 8}"#)
        #expect(try controller.reply().ok)
        try harness.daemon.pidfd.send(SIGSTOP)
        defer { try? harness.daemon.pidfd.send(SIGCONT) }
        // Stopped for sure (waitid P_PIDFD, WSTOPPED: voipd is this process's child).
        // Not stopped yet if the wait failed: then voipd could answer the status before the
        // INVITE is written.
        var info = siginfo_t()
        while waitid(idtype_t(rawValue: 3), id_t(harness.daemon.pidfd.descriptor.rawValue), &info, WSTOPPED) != 0 {
            let error = Errno.current("waitid(WSTOPPED)")
            guard error == .interrupted else { throw error }
        }
        #expect(processState(harness.daemon.pid) == "T")
        try controller.request(type: 17, #"{"id": 9, "name": "phone"}"#)
        try remote.write("INVITE")
        // A Unix socket's write queues the request on voipd's end before it returns. A TCP
        // write on loopback may return before its segment is through the loopback's receive
        // side (run later, in ksoftirqd, when the softirq's budget went to other traffic):
        // the far end's acknowledgement says the INVITE is there, and voipd's held set told.
        try remote.waitUntilAcknowledged()
        try harness.daemon.pidfd.send(SIGCONT)
        let reply = try controller.reply()
        let apps = reply.json["result"].flatMap { ($0 as? [String: Any])?["apps"] as? [[String: Any]] } ?? []
        #expect(apps.first?["state"] as? String == "background", "the status was served before the wake: \(reply.json)")
        try app.expectEvent(.voipSocketReadable)
    }

}

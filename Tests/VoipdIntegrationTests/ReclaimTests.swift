import Glibc
import Testing
import VoipClient
import VoipdSystem

/// Socket reclaim (TN2277): a suspended app's ordinary sockets are made unusable; its VoIP
/// sockets are never touched.
@Suite("Socket reclaim", .serialized)
final class ReclaimTests: DaemonSuite {
    @Test("after lock, a reclaimed TCP data socket fails on the app's next read and write; its peer sees the end; the VoIP socket still works")
    func lockReclaimsDataSocket() throws {
        let peer = try harness.makePeer()
        let (app, sipRemote) = try harness.launchAppWithVoIPSocket("phone", peer: peer)
        try app.send(.connect(socket: "presence", address: peer.address))
        let presenceRemote = try peer.accept()
        try app.expect(.connected(socket: "presence"))
        try harness.suspend(app)

        let locked = try harness.control.system(.lock)
        #expect(locked == ["phone"])
        #expect(try harness.status("phone").reclaimedSockets == 1)
        #expect(try presenceRemote.read() == "", "the peer sees the connection end")

        try harness.control.system(.unlock)
        try harness.control.command(.foreground, "phone")
        try harness.waitForState("phone", .active)
        try app.send(.write(socket: "presence", data: "PING"))
        #expect(try app.expect(\.writeErrno) == EPIPE)
        try app.send(.read(socket: "presence"))
        #expect(try app.expectRead("presence").data == nil, "end of file, or an error")

        // The VoIP socket was never touched.
        try sipRemote.write("OPTIONS")
        #expect(try app.expectRead("sip") == .data("OPTIONS"))
        try app.send(.write(socket: "sip", data: "200 OK"))
        #expect(try sipRemote.read() == "200 OK")
    }

    @Test("a reclaimed listening socket refuses connections, while a VoIP socket beside it still wakes the app")
    func reclaimListener() throws {
        let (app, sipRemote) = try harness.launchAppWithVoIPSocket("server")
        try app.send(.listen(socket: "web"))
        let port = try app.expect(\.listeningPort)
        try harness.suspend(app)

        try harness.control.command(.reclaim, "server")
        #expect(try harness.status("server").reclaimedSockets == 1)
        #expect(throws: Errno.self, "the kernel refuses the connection") { _ = try Socket.connectTCP(host: "127.0.0.1", port: port) }

        try sipRemote.write("INVITE")
        let wake = try app.expectEvent(.voipSocketReadable)
        #expect(wake.socket?.name == "sip")
        #expect(try app.expectRead("sip") == .data("INVITE"))
    }

    /// Locked before the app is launched, voipd knows of it only after the lock: it must
    /// still be told the screen is locked.
    @Test("while locked, an app reclaimed as soon as it is suspended; pipes and Unix sockets untouched",
          arguments: [false, true])
    func lockedBeforeSuspension(lockedBeforeLaunch: Bool) throws {
        let peer = try harness.makePeer()
        if lockedBeforeLaunch { #expect(try harness.control.system(.lock).isEmpty) }
        let app = try harness.launchTestApp("late")
        try app.send(.connect(socket: "presence", address: peer.address))
        let presenceRemote = try peer.accept()
        try app.expect(.connected(socket: "presence"))
        if !lockedBeforeLaunch { #expect(try harness.control.system(.lock).isEmpty) }
        try harness.suspend("late")
        #expect(try presenceRemote.read() == "")
        #expect(try harness.status("late").reclaimedSockets == 1, "only the TCP socket; the report channel (Unix) is intact")
        try harness.control.command(.foreground, "late")
        try app.expectEvent(.didBecomeActive)
    }
}

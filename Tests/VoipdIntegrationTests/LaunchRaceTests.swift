import Glibc
import Testing
import VoipClient

/// Issue 10, part 5: `voipctl launch` of a program that takes a while to start, followed at
/// once by `voipctl background`, stopped it before it connected: no sockets, never registered,
/// never reachable. Lifecycle steps now wait for a launched app's hello (at most connectTimeout).
@Suite("Launching and backgrounding at once", .serialized)
struct LaunchRaceTests {
    @Test("backgrounded before it said hello, a slow-starting app is told once it connects, registers its socket, then is suspended")
    func backgroundBeforeHello() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let peer = try harness.makePeer()
        // The program starts slowly, as `sh -c 'sleep 1; exec softphone …'` did.
        // It registers its socket before it lets didEnterBackground go, as a VoIP app must.
        _ = try harness.control.launch(["/bin/sh", "-c", "sleep 1; exec \"$0\" \"$@\"", Binaries.testApp, "--report", harness.reports.path,
                                        "--no-ack", "didEnterBackground"], name: "phone")
        try harness.control.command(.background, "phone")
        #expect(try harness.status("phone").state == .active, "nothing moves before the app can be told")
        let app = try harness.acceptApp("phone")
        try app.send(.register(socket: "sip", address: peer.address))
        _ = try peer.accept()
        try app.expect(.registered(socket: "sip"))
        try app.expectEvent(.willResignActive)
        let entered = try app.expectEvent(.didEnterBackground)
        try app.send(.acknowledge(eventID: entered.id))
        try harness.waitForState("phone", .suspended)
        let status = try harness.status("phone")
        #expect(status.connected && status.voipSockets == 1, "\(status)")
    }
}

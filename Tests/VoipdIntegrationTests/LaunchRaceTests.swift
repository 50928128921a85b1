import Glibc
import Testing
import VoipClient
import VoipdSystem

/// Issue 10, part 5: `voipctl launch` of a program that takes a while to start, followed at
/// once by `voipctl background`, stopped it before it connected: no sockets, never registered,
/// never reachable. Lifecycle steps now wait for a launched app's hello (at most connectTimeout).
@Suite("Launching and backgrounding at once", .serialized)
final class LaunchRaceTests: DaemonSuite {
    @Test("backgrounded before it said hello, a slow-starting app is told once it connects, registers its socket, then is suspended")
    func backgroundBeforeHello() throws {
        let peer = try harness.makePeer()
        // The program starts slowly, as `sh -c 'sleep 1; exec softphone …'` did: here it
        // starts when the test lets it (a line in a FIFO), so that the test's requests come
        // first however slow the machine. It registers its socket before it lets
        // didEnterBackground go, as a VoIP app must.
        let gate = harness.directory + "/start"
        guard mkfifo(gate, 0o600) == 0 else { throw Errno.current("mkfifo") }
        _ = try harness.control.launch(["/bin/sh", "-c", #"read line < "$1"; shift; exec "$@""#, "sh", gate, Binaries.testApp,
                                        "--report", harness.reports.path, "--no-ack", "didEnterBackground"], name: "phone")
        try harness.control.command(.background, "phone")
        #expect(try harness.status("phone").state == .active, "nothing moves before the app can be told")
        // Read and write: opening waits for nobody, and the line stays until the shell reads it.
        let start = try openFile(gate, flags: O_RDWR)
        try start.writeAll(Array("go\n".utf8))
        let app = try harness.acceptApp("phone")
        withExtendedLifetime(start) {}
        try app.registerVoIPSocket("sip", connectedTo: peer)
        try app.expectEvent(.willResignActive)
        let entered = try app.expectEvent(.didEnterBackground)
        try app.send(.acknowledge(eventID: entered.id))
        try harness.waitForState("phone", .suspended)
        let status = try harness.status("phone")
        #expect(status.connected && status.voipSockets == 1, "\(status)")
    }
}

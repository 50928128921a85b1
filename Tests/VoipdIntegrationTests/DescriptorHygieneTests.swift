import Glibc
import Testing
import VoipClient

/// Descriptors are closed exactly once: after apps and clients come and go, voipd holds what
/// it held before.
@Suite("Descriptor hygiene", .serialized)
final class DescriptorHygieneTests: DaemonSuite {
    @Test("voipd's open descriptors return to their count after apps come, register sockets, die and are forgotten")
    func returnsToBaseline() throws {
        let baseline = openDescriptorCount(harness.daemon.pid)
        let peer = try harness.makePeer()
        var remotes: [PeerConnection] = []
        for round in 0..<5 {
            let name = "app\(round)"
            let app = try harness.launchTestApp(name)
            remotes.append(try app.registerVoIPSocket("sip", connectedTo: peer))
            remotes.append(try app.registerVoIPSocket("presence", connectedTo: peer))
            try app.send(.unregister(socket: "presence"))
            try app.expect(.unregistered(socket: "presence"))
            #expect(openDescriptorCount(harness.daemon.pid) > baseline)
            try harness.control.command(.kill, name)
            try harness.waitForState(name, .terminated)
            // Still held after the crash: never reclaimed…
            #expect(try harness.control.sockets(name).map(\.name) == ["sip"])
            // …until the app's record is forgotten.
            try harness.control.command(.forget, name)
        }
        var count = -1
        for _ in 0..<50 {
            // The stand-in service manager reads (its queue holds 10 datagrams): what voipd
            // held back for it while it did not, with copies of the sockets it stored, goes.
            harness.drainNotifications()
            _ = try harness.control.status()
            count = openDescriptorCount(harness.daemon.pid)
            if count == baseline { break }
        }
        #expect(count == baseline)
        // Every held socket really was closed: its peer sees the connection end (once the
        // copies voipd gave the notify socket's stand-in for the fd store are closed too).
        harness.drainNotifications()
        for remote in remotes { #expect(try remote.read() == "") }
    }
}

import Foundation
import Glibc
import Testing
import VoipClient
import VoipdProtocol
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// An adopted program reached on its listener: a registrar that does not reuse the phone's
/// connection opens a new one to the phone's Contact, its SIP listening port. The `sip`
/// preset adopts baresip's TCP listener, and voipd holds it as a listener (a waiting
/// connection wakes the program, which accepts it itself).
@Suite("voipd waking an adopted program on its listener", .serialized,
       .softphonesInPrivateNetwork())
struct AdoptedListenerTests {
    @Test("baresip registered over TCP to a Kamailio without connection reuse, adopted with sip and suspended: the INVITE comes on a new connection to its listener, which wakes it; it rings and answers, accepts that connection itself, and is suspended again after the BYE",
          .timeLimit(.minutes(3)))
    func wokenOnItsListener() throws {
        let network = try PrivateNetwork()
        defer { network.stop() }
        try NamespacedKamailio.start(in: network, port: 5060, defines: ["WITHOUT_CONNECTION_REUSE"])
        let alice = try AdoptedBaresip(in: network, transport: "tcp")
        let (harness, pid, log) = (alice.harness, alice.pid, alice.log)
        defer { harness.stop() }
        #expect(ProcFS.state(of: pid) == "T")
        let listeners = try harness.control.sockets("alice").filter { $0.role == "listening" }
        #expect(Set(listeners.compactMap { $0.kind.split(separator: " ").dropFirst().first.map(String.init) })
                    == ["\(PrivateNetwork.address):5070", "\(PrivateNetwork.address):5071"],
                "its SIP and TLS listeners, held as listeners: \(listeners)")
        let accepted = try inboundConnections(of: pid)
        #expect(accepted.isEmpty, "nothing has connected to it yet: \(accepted)")

        // Its own 15 s wait for "Call established" is the test that the call rang and was answered.
        let caller = try Baresip(in: network, name: "bob", sipPort: 5080, user: "bob", transport: "udp", dial: "sip:alice@127.0.0.1")
        let woken = try harness.waitForState("alice", .background)
        #expect(woken.from == .suspended, "\(woken)")
        try waitForText("Call established", in: log, timeout: .seconds(10))
        #expect(try inboundConnections(of: pid).contains { $0.remote?.address == IPAddress("127.0.0.1") },
                "Kamailio's new connection, accepted by baresip on its listener")
        try caller.process.pidfd.send(SIGTERM)
        _ = try caller.process.waitForExit(.seconds(10))
        try harness.waitForState("alice", .suspended, timeout: .seconds(30))
        #expect(network.read("alice.log").components(separatedBy: "Call established").count - 1 == 1, "one call, no ghost")
    }

    /// Its TCP connections accepted on its SIP port (local port 5070, not a listener).
    private func inboundConnections(of pid: pid_t) throws -> [NetworkSocket] {
        try SocketDiscovery.discover(root: pid).sockets.map(\.socket).filter {
            $0.transport == .tcp && $0.role == .connected && $0.local.port == 5070
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import SIP
import VoipdTestSupport

/// A UDP socket on an ephemeral loopback port that sends and receives SIP messages to and
/// from a registrar, with poll() deadlines.
final class TestDatagramPeer {
    let socket: SIPDatagramSocket
    let server: SIPSocketAddress

    init(serverPort: UInt16) throws {
        guard let server = SIPSocketAddress(numericHost: "127.0.0.1", port: serverPort) else { throw TestFailure("no address") }
        self.server = server
        socket = try SIPDatagramSocket(binding: server.with(port: 0))
    }

    var port: UInt16 { socket.localAddress.port }

    /// `SIP/2.0/UDP 127.0.0.1:PORT;branch=BRANCH;rport`
    func via(branch: String) -> String { "SIP/2.0/UDP 127.0.0.1:\(port);branch=\(branch);rport" }

    func send(_ message: SIPMessage) throws { try socket.send(message.serialized(), to: server) }

    func sendBytes(_ bytes: [UInt8]) throws { try socket.send(bytes, to: server) }

    /// The next message, waiting at most `timeout`.
    func receive(within timeout: Duration = .seconds(5)) throws -> SIPMessage {
        let deadline = ContinuousClock.now + timeout
        while true {
            if case .datagram(let bytes, _) = try socket.receive(), let message = try SIPDatagram.message(in: bytes) { return message }
            try waitReadable(socket.fd, until: deadline)
        }
    }

    /// Whether nothing arrives within `duration`.
    func staysQuiet(for duration: Duration) throws -> SIPMessage? {
        do {
            return try receive(within: duration)
        } catch is TestFailure {
            return nil
        }
    }
}

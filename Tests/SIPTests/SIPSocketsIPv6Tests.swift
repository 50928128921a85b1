@testable import SIP
import Testing
import VoipdSystem
import VoipdTestSupport

/// SIP's sockets go through the system layer, IPv4 and IPv6 alike.
@Suite struct SIPSocketsIPv6Tests {
    private let loopback = SIPSocketAddress(numericHost: "[::1]", port: 0)!

    @Test func aDatagramOverIPv6ArrivesWithItsSenderAndAConnectedSocketKnowsItsPeer() throws {
        let receiver = try SIPDatagramSocket(binding: loopback)
        let sender = try SIPDatagramSocket(binding: loopback)
        #expect(receiver.localAddress.address == loopback.address && receiver.localAddress.port != 0)
        #expect(receiver.localAddress.uriHost == "[::1]" && receiver.connectedPeer == nil)
        try sender.connect(to: receiver.localAddress)
        #expect(sender.connectedPeer == receiver.localAddress)
        try sender.send(Array("OPTIONS".utf8), to: receiver.localAddress)
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            switch try receiver.receive() {
            case .datagram(let bytes, let from):
                #expect(bytes == Array("OPTIONS".utf8) && from == sender.localAddress)
                return
            case .oversized:
                Issue.record("a 7-byte datagram reported oversized")
                return
            case .nothing:
                guard ContinuousClock.now < deadline else { throw TestFailure("no datagram within 5 s") }
                _ = try waitReadable(receiver.descriptor, timeoutMilliseconds: 100)
            }
        }
    }

    @Test func aTCPListenerOnIPv6AcceptsAConnectionAndNamesItsPeer() throws {
        let listener = try SIPSocket.listen(host: "::1", port: 0)
        let port = try SIPSocket.localPort(listener)
        let client = try SIPSocket.connect(host: "[::1]", port: port)
        let local = try #require(try Socket.localEndpoint(of: client))
        _ = try waitReadable(listener, timeoutMilliseconds: 5000)
        guard let accepted = try SIPSocket.accept(listener) else { throw TestFailure("no connection to accept") }
        #expect(SIPSocket.peerName(accepted) == "[::1]:\(local.port)")
        #expect(SIPSocket.peerName(client) == "[::1]:\(port)")
    }

    @Test func numericHostsAreTakenAsTheyAreAndLocalhostIsResolved() throws {
        #expect(try SIPSocketAddress.resolve(host: "[::1]", port: 5060).description == "[::1]:5060")
        #expect(try SIPSocketAddress.resolve(host: "127.0.0.1", port: 5060).description == "127.0.0.1:5060")
        #expect(try SIPSocketAddress.resolve(host: "localhost", port: 5060).address == SIPSocketAddress(numericHost: "127.0.0.1", port: 0)!.address
            || SIPSocketAddress.resolve(host: "localhost", port: 5060).address == loopback.address)
        #expect(SIPSocketAddress(numericHost: "example.org", port: 5060) == nil)
    }
}

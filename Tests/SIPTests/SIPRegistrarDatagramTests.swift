import SIP
import Testing

/// The embedded registrar over UDP: answers go to the source address, requests and failures
/// are retransmitted on the transaction timers (scaled down: T1 = 40 ms), retransmissions
/// received are absorbed, and a bad datagram costs only itself.
@Suite struct SIPRegistrarDatagramTests {
    private static let timers = SIPTimerValues(t1: .milliseconds(40), t2: .milliseconds(320), t4: .milliseconds(400))

    private func register(_ peer: TestDatagramPeer, user: String = "alice") throws -> SIPMessage {
        let register = SIPMessage.request(.register, uri: SIPURI(host: "127.0.0.1"), headers: [
            ("Via", peer.via(branch: "z9hG4bKreg\(peer.port)")), ("Max-Forwards", "70"), ("From", "<sip:\(user)@127.0.0.1>;tag=r"),
            ("To", "<sip:\(user)@127.0.0.1>"), ("Call-ID", "reg-\(peer.port)"), ("CSeq", "1 REGISTER"),
            ("Contact", "<sip:\(user)@127.0.0.1:\(peer.port);transport=udp>"), ("Expires", "600"),
        ])
        try peer.send(register)
        return try peer.receive()
    }

    private func invite(to user: String, via: String, branch: String = "z9hG4bKinv") -> SIPMessage {
        .request(.invite, uri: SIPURI(user: user, host: "127.0.0.1"), headers: [
            ("Via", via), ("Max-Forwards", "70"), ("From", "<sip:bob@127.0.0.1>;tag=bob"), ("To", "<sip:\(user)@127.0.0.1>"),
            ("Call-ID", "call-\(branch)"), ("CSeq", "1 INVITE"), ("Contact", "<sip:bob@bob.invalid>"),
        ])
    }

    @Test func answersARegisterAtItsSourceAddressNotingTheSourcePortInVia() throws {
        try withRegistrar(timers: Self.timers) { registrar, _ in
            let peer = try TestDatagramPeer(serverPort: registrar.port)
            let ok = try register(peer)
            #expect(ok.statusCode == 200)
            #expect(ok.contact?.parameters["expires"] == "600")
            #expect(ok.topVia?.parameters["rport"] == "\(peer.port)", "RFC 3581: the source port in rport")
            #expect(ok.topVia?.parameters["received"] == nil, "the sent-by host is the source address already")
        }
    }

    @Test func retransmitsAnInviteToAUDPCalleeUntilItAnswers() throws {
        try withRegistrar(timers: Self.timers) { registrar, recorder in
            let callee = try TestDatagramPeer(serverPort: registrar.port)
            _ = try register(callee)
            let caller = try TestConnection(port: registrar.port)
            try caller.send(invite(to: "alice", via: "SIP/2.0/TCP bob.invalid;branch=z9hG4bKinv;rport"))
            #expect(try caller.receive().statusCode == 100)
            let first = try callee.receive()
            let second = try callee.receive(within: .milliseconds(500))
            #expect(first.method == .invite && second == first, "timer A: the same INVITE again")
            try callee.send(first.answered(180, toTag: "alice"))
            #expect(try caller.receive().statusCode == 180)
            // The 180 stopped timer A: nothing more, within several T1. A test slower than
            // T1 reads a retransmission sent before the 180 came, so that is not looked at.
            let stray = try recorder.sent(after: "the 180", within: .milliseconds(300), taken: { $0.statusCode == 180 }) { $0.method == .invite }
            #expect(stray == nil, "no retransmission after a provisional response: \(stray?.summary ?? "")")
        }
    }

    @Test func retransmitsAFailureToAUDPCallerUntilTheAck() throws {
        try withRegistrar(timers: Self.timers) { registrar, recorder in
            let caller = try TestDatagramPeer(serverPort: registrar.port)
            let invite = invite(to: "nobody", via: caller.via(branch: "z9hG4bKlost"), branch: "z9hG4bKlost")
            try caller.send(invite)
            let notFound = try caller.receive()
            #expect(notFound.statusCode == 404)
            #expect(try caller.receive(within: .milliseconds(500)) == notFound, "timer G: the 404 again")
            var ack = SIPMessage.request(.ack, uri: invite.requestURI!, headers: [])
            for name in ["Via", "From", "Call-ID"] { ack.headers.add(name, invite.headers[name]!) }
            ack.headers.add("To", notFound.headers["To"]!)
            ack.headers.add("CSeq", "1 ACK")
            try caller.send(ack)
            // Those sent before the ACK came are not looked at: as many as T1s the test is slow.
            let stray = try recorder.sent(after: "the ACK", within: .milliseconds(700), taken: { $0.method == .ack }) { $0.statusCode == 404 }
            #expect(stray == nil, "no retransmission after the ACK: \(stray?.summary ?? "")")
            #expect(recorder.recorded.contains { if case .received(let message) = $0.kind { message.method == .ack } else { false } })
        }
    }

    @Test func aRetransmittedRequestIsAnsweredNotForwardedTwice() throws {
        try withRegistrar(timers: Self.timers) { registrar, recorder in
            let callee = try TestConnection(port: registrar.port)
            try callee.sendBytes(Fixtures.bytes(Fixtures.registerLines()))
            #expect(try callee.receive().statusCode == 200)
            let caller = try TestDatagramPeer(serverPort: registrar.port)
            let invite = invite(to: "alice", via: caller.via(branch: "z9hG4bKtwice"), branch: "z9hG4bKtwice")
            try caller.send(invite)
            #expect(try caller.receive().statusCode == 100)
            try caller.send(invite)
            #expect(try caller.receive().statusCode == 100, "the retransmission gets the last response again")
            #expect(try callee.receive().method == .invite)
            try recorder.waitUntil("both copies of the INVITE") { events in
                events.filter { if case .received(let message) = $0.kind { message.method == .invite } else { false } }.count == 2
            }
            let forwarded = recorder.recorded.filter { if case .sent(let message) = $0.kind { message.method == .invite } else { false } }
            #expect(forwarded.count == 1, "forwarded once")
        }
    }

    @Test func aBadDatagramCostsOnlyItself() throws {
        try withRegistrar(timers: Self.timers) { registrar, recorder in
            let peer = try TestDatagramPeer(serverPort: registrar.port)
            try peer.sendBytes(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            try peer.sendBytes(Array("\r\n\r\n".utf8))
            try recorder.waitFor("the bad datagram to be dropped") {
                if case .note(let text) = $0.kind { text.contains("unreadable datagram") } else { false }
            }
            #expect(try register(peer).statusCode == 200)
        }
    }
}

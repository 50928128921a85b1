@testable import SIP
import Testing

/// The registrar's routing decisions without sockets: connections are plain numbers.
@Suite struct SIPProxyRouterTests {
    private let alice = 1
    private let bob = 2
    private let start = ContinuousClock.now

    private func registered() throws -> SIPProxyRouter {
        var router = SIPProxyRouter(host: "127.0.0.1", port: 5070)
        _ = router.handle(try Fixtures.message(Fixtures.registerLines()), from: alice, at: start)
        return router
    }

    private func invite() throws -> SIPMessage {
        try Fixtures.message([
            "INVITE sip:alice@127.0.0.1:5070 SIP/2.0", "Via: SIP/2.0/TCP bob.invalid;branch=z9hG4bKcaller;rport",
            "Max-Forwards: 70", "From: <sip:bob@127.0.0.1>;tag=bobtag", "To: <sip:alice@127.0.0.1:5070>",
            "Call-ID: call-1", "CSeq: 1 INVITE", "Contact: <sip:bob@bob.invalid;transport=tcp>",
        ])
    }

    private func sent(_ outputs: [SIPProxyRouter.Output]) -> [(SIPMessage, Int)] {
        outputs.compactMap { if case .send(let message, let target) = $0 { (message, target) } else { nil } }
    }

    @Test func registerBindsTheUserToItsConnection() throws {
        var router = SIPProxyRouter(host: "127.0.0.1", port: 5070)
        let outputs = sent(router.handle(try Fixtures.message(Fixtures.registerLines()), from: alice, at: start))
        #expect(outputs.count == 1)
        let (ok, target) = outputs[0]
        #expect(target == alice)
        #expect(ok.statusCode == 200)
        #expect(ok.toTag != nil)
        #expect(ok.contact?.parameters["expires"] == "600")
        #expect(router.bindings["alice"]?.connection == alice)
    }

    @Test func expiresAreCappedAndZeroUnregisters() throws {
        var router = try registered()
        let long = sent(router.handle(try Fixtures.message(Fixtures.registerLines(expires: 99_999)), from: alice, at: start))
        #expect(long[0].0.contact?.parameters["expires"] == "3600")
        _ = router.handle(try Fixtures.message(Fixtures.registerLines(expires: 0)), from: alice, at: start)
        #expect(router.bindings.isEmpty)
    }

    @Test func forwardsAnInviteOverTheRegisteredConnection() throws {
        var router = try registered()
        let outputs = sent(router.handle(try invite(), from: bob, at: start))
        #expect(outputs.map(\.1) == [bob, alice])
        #expect(outputs[0].0.statusCode == 100)
        let forwarded = outputs[1].0
        #expect(forwarded.requestURI?.description == "sip:alice@alice.invalid;transport=tcp")
        #expect(forwarded.vias.count == 2)
        #expect(forwarded.topVia?.host == "127.0.0.1")
        #expect(forwarded.topVia?.port == 5070)
        #expect(forwarded.headers["Record-Route"] == "<sip:127.0.0.1:5070;transport=tcp;lr>")
        #expect(forwarded.maxForwards == 69)
    }

    @Test func relaysResponsesBackAndAbsorbsTrying() throws {
        var router = try registered()
        let forwarded = sent(router.handle(try invite(), from: bob, at: start))[1].0
        #expect(sent(router.handle(forwarded.answered(100, toTag: nil), from: alice, at: start)).isEmpty)
        let relayed = sent(router.handle(forwarded.answered(180), from: alice, at: start))
        #expect(relayed.map(\.1) == [bob])
        #expect(relayed[0].0.vias.map(\.branch) == ["z9hG4bKcaller"])
    }

    @Test func refusesUnknownUsersAndExhaustedMaxForwards() throws {
        var router = try registered()
        var invite = try invite()
        invite.requestURI = SIPURI(user: "carol", host: "127.0.0.1")
        #expect(sent(router.handle(invite, from: bob, at: start)).map { $0.0.statusCode } == [404])
        invite.headers.set("Max-Forwards", "0")
        #expect(sent(router.handle(invite, from: bob, at: start)).map { $0.0.statusCode } == [483])
    }

    @Test func aBindingDiesWithItsConnectionOrAtExpiry() throws {
        var router = try registered()
        #expect(router.connectionClosed(alice) == [.note("binding of alice removed: its connection closed")])
        #expect(sent(router.handle(try invite(), from: bob, at: start)).map { $0.0.statusCode } == [404])
        router = try registered()
        let later = start + .seconds(601)
        #expect(sent(router.handle(try invite(), from: bob, at: later)).map { $0.0.statusCode } == [404])
    }

    @Test func answers480WhenTheCalleesConnectionDiesBeforeItAnswers() throws {
        var router = try registered()
        _ = router.handle(try invite(), from: bob, at: start)
        let outputs = sent(router.connectionClosed(alice))
        #expect(outputs.map(\.1) == [bob])
        #expect(outputs.first?.0.statusCode == 480)
        #expect(outputs.first?.0.vias.map(\.branch) == ["z9hG4bKcaller"])
        #expect(router.transactions.isEmpty && router.dialogs.isEmpty)
    }

    @Test func routesInDialogRequestsBothWaysAndPopsItsRoute() throws {
        var router = try registered()
        let forwarded = sent(router.handle(try invite(), from: bob, at: start))[1].0
        let ok = forwarded.answered(200, toTag: "alicetag")
        _ = router.handle(ok, from: alice, at: start)
        let fromCaller = SIPMessage.request(.bye, uri: SIPURI(user: "alice", host: "alice.invalid"), headers: [
            ("Via", "SIP/2.0/TCP bob.invalid;branch=z9hG4bKbye"), ("Route", "<sip:127.0.0.1:5070;transport=tcp;lr>"),
            ("From", "<sip:bob@127.0.0.1>;tag=bobtag"), ("To", "<sip:alice@127.0.0.1:5070>;tag=alicetag"),
            ("Call-ID", "call-1"), ("CSeq", "2 BYE"),
        ])
        let toAlice = sent(router.handle(fromCaller, from: bob, at: start))
        #expect(toAlice.map(\.1) == [alice])
        #expect(toAlice[0].0.routes.isEmpty)
        var fromCallee = fromCaller
        fromCallee.headers.set("From", "<sip:alice@127.0.0.1:5070>;tag=alicetag")
        fromCallee.headers.set("To", "<sip:bob@127.0.0.1>;tag=bobtag")
        #expect(sent(router.handle(fromCallee, from: alice, at: start)).map(\.1) == [bob])
        let byeOK = toAlice[0].0.answered(200, toTag: nil)
        #expect(sent(router.handle(byeOK, from: alice, at: start)).map(\.1) == [bob])
        #expect(router.dialogs.isEmpty)
    }

    @Test func cancelIsAnsweredAndSentOnWithTheInvitesBranch() throws {
        var router = try registered()
        let invite = try invite()
        let forwarded = sent(router.handle(invite, from: bob, at: start))[1].0
        var cancel = invite
        cancel.startLine = .request(method: .cancel, uri: invite.requestURI!)
        cancel.headers.set("CSeq", "1 CANCEL")
        let outputs = sent(router.handle(cancel, from: bob, at: start))
        #expect(outputs.map(\.1) == [bob, alice])
        #expect(outputs[0].0.statusCode == 200)
        let cancelled = outputs[1].0
        #expect(cancelled.method == .cancel)
        #expect(cancelled.topVia?.branch == forwarded.topVia?.branch)
        #expect(cancelled.requestURI == forwarded.requestURI)
        #expect(sent(router.handle(cancelled.answered(200), from: alice, at: start)).isEmpty)
        let terminated = forwarded.answered(487, toTag: "alicetag")
        #expect(sent(router.handle(terminated, from: alice, at: start)).map(\.1) == [bob])
        var ack = cancel
        ack.startLine = .request(method: .ack, uri: invite.requestURI!)
        ack.headers.set("CSeq", "1 ACK")
        ack.headers.set("To", terminated.headers["To"]!)
        let acked = sent(router.handle(ack, from: bob, at: start))
        #expect(acked.map(\.1) == [alice])
        #expect(acked[0].0.topVia?.branch == forwarded.topVia?.branch)
        #expect(router.transactions.isEmpty)
    }

    @Test func dropsResponsesItDidNotForward() throws {
        var router = try registered()
        let stray = try invite().answered(200)
        #expect(router.handle(stray, from: alice, at: start).allSatisfy { if case .note = $0 { true } else { false } })
    }
}

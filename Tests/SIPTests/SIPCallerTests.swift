import SIP
import Testing

@Suite struct SIPCallerTests {
    private let configuration = SIPCaller.Configuration(
        target: SIPURI(user: "alice", host: "127.0.0.1", port: 5070), user: "bob", domain: "127.0.0.1:5070",
        holdTime: .seconds(2))
    private let calleeContact = "<sip:alice@alice.invalid;transport=tcp;alias=127.0.0.1~40000~2>"

    private func calling() -> (SIPCaller, SIPMessage) {
        var caller = SIPCaller(configuration: configuration)
        let invite = caller.call().sentMessages()[0]
        return (caller, invite)
    }

    /// A 2xx or 18x as it arrives through a proxy that record-routes twice.
    private func answer(_ invite: SIPMessage, _ status: Int) -> SIPMessage {
        invite.answered(status, toTag: "alicetag", adding: [
            ("Record-Route", "<sip:proxy2.invalid;lr>, <sip:127.0.0.1:5070;transport=tcp;lr>"), ("Contact", calleeContact),
        ])
    }

    @Test func sendsAnInviteWithSDP() {
        let (caller, invite) = calling()
        #expect(invite.method == .invite)
        #expect(invite.requestURI?.description == "sip:alice@127.0.0.1:5070")
        #expect(invite.headers["To"] == "<sip:alice@127.0.0.1:5070>")
        #expect(invite.fromTag != nil)
        #expect(invite.cseq == SIPCSeq(number: 1, method: .invite))
        #expect(invite.headers["Contact"] == "<sip:bob@bob.invalid;transport=tcp>")
        #expect(invite.headers["Content-Type"] == "application/sdp")
        #expect(invite.bodyText?.contains("m=audio 40002 RTP/AVP 0\r\n") == true)
        #expect(caller.state == .calling)
    }

    @Test func reportsEveryResponse() {
        var (caller, invite) = calling()
        var events: [SIPCaller.Event] = []
        for status in [100, 180, 183] { events += caller.receive(invite.answered(status, toTag: nil)).reportedEvents() }
        #expect(events == [100, 180, 183].map { .response(statusCode: $0, reasonPhrase: SIPStatus.reasonPhrase(for: $0), method: .invite) })
        #expect(caller.state == .proceeding(statusCode: 183))
    }

    @Test func acknowledgesTheAnswerAlongTheReversedRecordRoute() {
        var (caller, invite) = calling()
        let actions = caller.receive(answer(invite, 200))
        let ack = actions.sentMessages()[0]
        #expect(ack.method == .ack)
        #expect(ack.requestURI?.description == "sip:alice@alice.invalid;transport=tcp;alias=127.0.0.1~40000~2")
        #expect(ack.headers.values("Route") == ["<sip:127.0.0.1:5070;transport=tcp;lr>", "<sip:proxy2.invalid;lr>"])
        #expect(ack.cseq == SIPCSeq(number: 1, method: .ack))
        #expect(ack.toTag == "alicetag")
        #expect(ack.topVia?.branch != invite.topVia?.branch)
        #expect(actions.startedTimers() == [.hangUp: .seconds(2)])
        #expect(actions.reportedEvents().contains(.answered))
        #expect(caller.state == .inCall)
        #expect(caller.wasAnswered)
    }

    @Test func hangsUpAfterTheHoldTime() {
        var (caller, invite) = calling()
        _ = caller.receive(answer(invite, 200))
        let bye = caller.timerFired(.hangUp).sentMessages()[0]
        #expect(bye.method == .bye)
        #expect(bye.cseq == SIPCSeq(number: 2, method: .bye))
        #expect(bye.headers["From"] == invite.headers["From"])
        #expect(bye.toTag == "alicetag")
        #expect(caller.state == .hangingUp)
        let ended = caller.receive(bye.answered(200, toTag: nil))
        #expect(ended.reportedEvents().last == .ended(.answered))
        #expect(caller.outcome == .answered)
    }

    @Test func answersTheCalleesBye() {
        var (caller, invite) = calling()
        _ = caller.receive(answer(invite, 200))
        let bye = SIPMessage.request(.bye, uri: SIPURI(user: "bob", host: "bob.invalid"), headers: [
            ("Via", "SIP/2.0/TCP 127.0.0.1:5070;branch=z9hG4bKbye"), ("From", "<sip:alice@127.0.0.1:5070>;tag=alicetag"),
            ("To", invite.headers["From"]!), ("Call-ID", invite.callID!), ("CSeq", "1 BYE"),
        ])
        let actions = caller.receive(bye)
        #expect(actions.sentMessages().map(\.statusCode) == [200])
        #expect(actions.cancelledTimers() == [.hangUp])
        #expect(caller.outcome == .answered)
    }

    @Test func cancelWaitsForAProvisionalResponseThenCopiesTheInvite() {
        var (caller, invite) = calling()
        #expect(caller.cancel().sentMessages().isEmpty)
        let cancel = caller.receive(invite.answered(180)).sentMessages()[0]
        #expect(cancel.method == .cancel)
        #expect(cancel.requestURI == invite.requestURI)
        #expect(cancel.headers.lines("Via") == invite.headers.lines("Via"))
        #expect(cancel.headers["From"] == invite.headers["From"])
        #expect(cancel.headers["To"] == invite.headers["To"])
        #expect(cancel.cseq == SIPCSeq(number: 1, method: .cancel))
    }

    @Test func acknowledgesA487InTheInviteTransaction() {
        var (caller, invite) = calling()
        _ = caller.receive(invite.answered(180))
        _ = caller.cancel()
        let terminated = invite.answered(487, toTag: "alicetag")
        let actions = caller.receive(terminated)
        let ack = actions.sentMessages()[0]
        #expect(ack.method == .ack)
        #expect(ack.topVia?.branch == invite.topVia?.branch)
        #expect(ack.toTag == "alicetag")
        #expect(ack.cseq == SIPCSeq(number: 1, method: .ack))
        #expect(caller.outcome == .notAnswered(statusCode: 487))
        #expect(!caller.wasAnswered)
    }

    @Test func hangsUpAnAnswerThatCrossedItsCancel() {
        var (caller, invite) = calling()
        _ = caller.receive(invite.answered(180))
        _ = caller.cancel()
        let sent = caller.receive(answer(invite, 200)).sentMessages()
        #expect(sent.map(\.method) == [.ack, .bye])
        #expect(caller.state == .hangingUp)
    }

    @Test func usesStrictRoutingWhenTheFirstHopHasNoLr() {
        var (caller, invite) = calling()
        let response = invite.answered(200, toTag: "t", adding: [("Record-Route", "<sip:strict.invalid>"), ("Contact", calleeContact)])
        let ack = caller.receive(response).sentMessages()[0]
        #expect(ack.requestURI?.description == "sip:strict.invalid")
        #expect(ack.headers.values("Route") == [calleeContact])
    }

    @Test func endsWhenTheConnectionIsLost() {
        var (caller, _) = calling()
        #expect(caller.connectionLost().reportedEvents() == [.ended(.notAnswered(statusCode: nil))])
    }
}

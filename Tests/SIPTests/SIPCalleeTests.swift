import SIP
import Testing

@Suite struct SIPCalleeTests {
    private let configuration = SIPCallee.Configuration(user: "alice", domain: "127.0.0.1:5070", expires: 600, answerDelay: .milliseconds(250), rtpPort: 4000)

    private func registered() -> (SIPCallee, SIPMessage) {
        var callee = SIPCallee(configuration: configuration)
        let register = callee.register().sentMessages()[0]
        _ = callee.receive(register.answered(200, adding: [("Contact", "<sip:alice@alice.invalid;transport=tcp>;expires=600")]))
        return (callee, register)
    }

    private func ringing() throws -> (SIPCallee, SIPMessage, [SIPCallee.Action]) {
        var (callee, _) = registered()
        let invite = try Fixtures.invite()
        let actions = callee.receive(invite)
        return (callee, invite, actions)
    }

    @Test func registersWithAnUnresolvableContact() {
        var callee = SIPCallee(configuration: configuration)
        let register = callee.register().sentMessages()[0]
        #expect(register.method == .register)
        #expect(register.requestURI?.description == "sip:127.0.0.1:5070")
        #expect(register.headers["To"] == "<sip:alice@127.0.0.1:5070>")
        #expect(register.from?.uri.description == "sip:alice@127.0.0.1:5070")
        #expect(register.fromTag != nil)
        #expect(register.headers["Contact"] == "<sip:alice@alice.invalid;transport=tcp>")
        #expect(register.expires == 600)
        #expect(register.cseq == SIPCSeq(number: 1, method: .register))
        #expect(register.topVia?.transport == "TCP")
        #expect(callee.registrationState == .registering)
    }

    @Test func registrationTakesTheGrantedExpiryAndArmsARefresh() {
        var callee = SIPCallee(configuration: configuration)
        let register = callee.register().sentMessages()[0]
        let actions = callee.receive(register.answered(200, adding: [
            ("Contact", "<sip:alice@alice.invalid;transport=tcp>;expires=120;received=\"sip:127.0.0.1:4;transport=TCP\""),
        ]))
        #expect(callee.registrationState == .registered(expires: 120))
        #expect(actions.startedTimers() == [.registrationRefresh: .seconds(90)])
        #expect(actions.reportedEvents() == [.registered(expires: 120)])
    }

    @Test func refreshKeepsCallIDAndTagAndIncrementsCSeq() {
        var (callee, first) = registered()
        let refresh = callee.timerFired(.registrationRefresh).sentMessages()[0]
        #expect(refresh.callID == first.callID)
        #expect(refresh.fromTag == first.fromTag)
        #expect(refresh.cseq?.number == 2)
        #expect(refresh.topVia?.branch != first.topVia?.branch)
        #expect(callee.registrationState == .registered(expires: 600))
    }

    @Test(arguments: [(3600, 3570), (60, 30), (10, 5), (1, 1)])
    func refreshesShortlyBeforeExpiry(granted: Int, refreshAfter: Int) {
        #expect(SIPCallee.refreshDelay(forGrantedExpiry: granted) == .seconds(refreshAfter))
    }

    @Test func retriesWithMinExpiresAfter423() {
        var callee = SIPCallee(configuration: SIPCallee.Configuration(user: "alice", domain: "x", expires: 30))
        let register = callee.register().sentMessages()[0]
        let retry = callee.receive(register.answered(423, adding: [("Min-Expires", "60")])).sentMessages()
        #expect(retry.first?.expires == 60)
        #expect(retry.first?.cseq?.number == 2)
    }

    @Test func failsOnAnErrorResponseAndIgnoresStaleOnes() {
        var callee = SIPCallee(configuration: configuration)
        let first = callee.register().sentMessages()[0]
        let second = callee.register().sentMessages()[0]
        #expect(callee.receive(first.answered(403)).isEmpty)
        let actions = callee.receive(second.answered(403))
        #expect(callee.registrationState == .failed(statusCode: 403))
        #expect(actions.reportedEvents() == [.registrationFailed(statusCode: 403)])
    }

    @Test func unregistersWithExpiresZero() {
        var (callee, _) = registered()
        let actions = callee.unregister()
        let unregister = actions.sentMessages()[0]
        #expect(unregister.expires == 0)
        #expect(actions.cancelledTimers() == [.registrationRefresh, .registrationRetry])
        let done = callee.receive(unregister.answered(200))
        #expect(callee.registrationState == .unregistered)
        #expect(done.reportedEvents() == [.unregistered])
    }

    @Test func ringsOnAnInviteWithResponsesThatCopyTheRequest() throws {
        let (callee, invite, actions) = try ringing()
        let sent = actions.sentMessages()
        #expect(sent.map(\.statusCode) == [100, 180])
        let ringing = sent[1]
        #expect(ringing.headers.lines("Via") == invite.headers.lines("Via"))
        #expect(ringing.headers["From"] == invite.headers["From"])
        #expect(ringing.headers["To"]?.hasPrefix(invite.headers["To"]! + ";tag=") == true)
        #expect(ringing.headers["Call-ID"] == invite.headers["Call-ID"])
        #expect(ringing.headers["CSeq"] == "1 INVITE")
        #expect(ringing.headers.lines("Record-Route") == invite.headers.lines("Record-Route"))
        #expect(ringing.headers["Contact"] == "<sip:alice@alice.invalid;transport=tcp>")
        #expect(sent[0].toTag == nil)
        #expect(actions.startedTimers() == [.answer: .milliseconds(250)])
        #expect(callee.callState == .ringing(callID: "call-1@bob.invalid"))
        #expect(actions.reportedEvents() == [.incomingCall(callID: "call-1@bob.invalid", from: invite.headers["From"]!)])
    }

    @Test func answersWithSDPWhenTheAnswerTimerFiresThenTakesTheACK() throws {
        var (callee, invite, ringingActions) = try ringing()
        let ok = callee.timerFired(.answer).sentMessages()[0]
        #expect(ok.statusCode == 200)
        #expect(ok.toTag == ringingActions.sentMessages()[1].toTag)
        #expect(ok.headers["Content-Type"] == "application/sdp")
        let sdp = try #require(ok.bodyText)
        for line in ["v=0", "c=IN IP4 127.0.0.1", "t=0 0", "m=audio 4000 RTP/AVP 0", "a=rtpmap:0 PCMU/8000"] {
            #expect(sdp.contains(line + "\r\n"))
        }
        #expect(callee.callState == .answered(callID: "call-1@bob.invalid"))
        let ack = ackFor(invite, toTag: ok.toTag!)
        #expect(callee.receive(ack).reportedEvents() == [.callEstablished(callID: "call-1@bob.invalid")])
        #expect(callee.callState == .inCall(callID: "call-1@bob.invalid"))
    }

    @Test func answersAByeWith200() throws {
        var (callee, invite, _) = try ringing()
        let ok = callee.timerFired(.answer).sentMessages()[0]
        _ = callee.receive(ackFor(invite, toTag: ok.toTag!))
        let bye = inDialogRequest(.bye, from: invite, toTag: ok.toTag!, cseq: 2)
        let actions = callee.receive(bye)
        #expect(actions.sentMessages().map(\.statusCode) == [200])
        #expect(callee.callState == .idle)
    }

    @Test func hangsUpWithAByeThatFollowsTheRouteSet() throws {
        var (callee, invite, _) = try ringing()
        let ok = callee.timerFired(.answer).sentMessages()[0]
        _ = callee.receive(ackFor(invite, toTag: ok.toTag!))
        let bye = callee.hangUp().sentMessages()[0]
        #expect(bye.method == .bye)
        #expect(bye.requestURI?.description == "sip:bob@bob.invalid;transport=tcp;alias=127.0.0.1~40312~2")
        #expect(bye.headers.values("Route") == ["<sip:127.0.0.1:5070;transport=tcp;lr>"])
        #expect(bye.headers["From"] == ok.headers["To"])
        #expect(bye.headers["To"] == invite.headers["From"])
        #expect(bye.callID == invite.callID)
        #expect(bye.cseq == SIPCSeq(number: 1, method: .bye))
        #expect(callee.callState == .hangingUp(callID: "call-1@bob.invalid"))
        let ended = callee.receive(bye.answered(200, toTag: nil))
        #expect(callee.callState == .idle)
        #expect(ended.reportedEvents() == [.callEnded(callID: "call-1@bob.invalid", reason: "hung up")])
    }

    @Test func cancelGets200AndTheInvite487() throws {
        var (callee, invite, _) = try ringing()
        var cancel = invite
        cancel.startLine = .request(method: .cancel, uri: invite.requestURI!)
        cancel.headers.set("CSeq", "1 CANCEL")
        cancel.body = []
        let actions = callee.receive(cancel)
        let sent = actions.sentMessages()
        #expect(sent.map(\.statusCode) == [200, 487])
        #expect(sent[0].cseq?.method == .cancel)
        #expect(sent[1].cseq?.method == .invite)
        #expect(actions.cancelledTimers().contains(.answer))
        #expect(callee.callState == .idle)
        #expect(callee.receive(ackFor(invite, toTag: sent[1].toTag!)).sentMessages().isEmpty)
    }

    @Test func declinesWhenHungUpWhileRinging() throws {
        var (callee, _, _) = try ringing()
        #expect(callee.hangUp().sentMessages().map(\.statusCode) == [603])
        #expect(callee.callState == .idle)
    }

    @Test func isBusyForASecondCallAndRefusesUnknownDialogs() throws {
        var (callee, invite, _) = try ringing()
        var other = invite
        other.headers.set("Call-ID", "call-2@bob.invalid")
        #expect(callee.receive(other).sentMessages().map(\.statusCode) == [486])
        let stray = inDialogRequest(.bye, from: other, toTag: "nobody", cseq: 2)
        #expect(callee.receive(stray).sentMessages().map(\.statusCode) == [481])
    }

    @Test func repeatsTheLastResponseToARetransmittedInvite() throws {
        var (callee, invite, actions) = try ringing()
        #expect(callee.receive(invite).sentMessages() == [actions.sentMessages()[1]])
    }

    @Test func forgetsEverythingWhenTheConnectionIsLost() throws {
        var (callee, _, _) = try ringing()
        let actions = callee.connectionLost()
        #expect(callee.registrationState == .unregistered)
        #expect(callee.callState == .idle)
        #expect(actions.cancelledTimers().contains(.registrationRefresh))
        #expect(actions.cancelledTimers().contains(.answer))
    }

    private func ackFor(_ invite: SIPMessage, toTag: String) -> SIPMessage {
        inDialogRequest(.ack, from: invite, toTag: toTag, cseq: 1)
    }

    private func inDialogRequest(_ method: SIPMethod, from invite: SIPMessage, toTag: String, cseq: UInt32) -> SIPMessage {
        .request(method, uri: SIPURI(user: "alice", host: "alice.invalid"), headers: [
            ("Via", "SIP/2.0/TCP 127.0.0.1:5070;branch=z9hG4bK\(method)"), ("From", invite.headers["From"]!),
            ("To", invite.headers["To"]! + ";tag=\(toTag)"), ("Call-ID", invite.callID!), ("CSeq", "\(cseq) \(method)"),
        ])
    }
}

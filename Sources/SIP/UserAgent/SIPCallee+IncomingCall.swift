extension SIPCallee {
    /// Ends the call: declines it while ringing (603), sends BYE once answered.
    public mutating func hangUp() -> [Action] {
        guard var call else { return [.log("hang-up without a call")] }
        switch callState {
        case .ringing:
            let decline = response(to: call.invite, statusCode: 603, localTag: call.localTag)
            return [.send(decline)] + endCall(call, reason: "declined")
        case .answered(let callID), .inCall(let callID):
            let bye = call.dialog.request(.bye, cseq: call.dialog.nextCSeq(), via: configuration.newVia())
            self.call = call
            callState = .hangingUp(callID: callID)
            return [.send(bye), .log("hanging up \(callID)")]
        case .idle, .hangingUp:
            return []
        }
    }

    mutating func incomingInvite(_ invite: SIPMessage) -> [Action] {
        if let call, call.invite.callID == invite.callID {
            // Same INVITE again: repeat our last answer. A re-INVITE gets our SDP once more.
            guard invite.toTag != nil else { return [.send(call.lastResponse)] }
            return [.send(answerResponse(to: invite, localTag: call.localTag))]
        }
        guard call == nil else {
            return [.send(.response(to: invite, statusCode: 486, toTag: SIPIdentifiers.tag())), .log("busy: \(invite.summary)")]
        }
        guard invite.toTag == nil else { return [.send(.response(to: invite, statusCode: 481, toTag: SIPIdentifiers.tag()))] }
        let localTag = SIPIdentifiers.tag()
        guard let dialog = SIPDialog(asCalleeOf: invite, localTag: localTag), let callID = invite.callID else {
            return [.send(.response(to: invite, statusCode: 400, reasonPhrase: "Missing Contact", toTag: localTag))]
        }
        let ringing = response(to: invite, statusCode: 180, localTag: localTag)
        call = IncomingCall(invite: invite, localTag: localTag, dialog: dialog, lastResponse: ringing)
        callState = .ringing(callID: callID)
        let caller = invite.headers["From"] ?? ""
        return [
            .send(.response(to: invite, statusCode: 100)),
            .send(ringing),
            .startTimer(.answer, after: configuration.answerDelay),
            .report(.incomingCall(callID: callID, from: caller)),
            .log("ringing: call \(callID) from \(caller)"),
        ]
    }

    mutating func answer() -> [Action] {
        guard var call, case .ringing(let callID) = callState else { return [] }
        let ok = answerResponse(to: call.invite, localTag: call.localTag)
        call.lastResponse = ok
        self.call = call
        callState = .answered(callID: callID)
        return [.send(ok), .log("answered \(callID)")]
    }

    /// The 2xx for the call was never acknowledged: the caller is gone or cannot reach us,
    /// so the call ends with a BYE (RFC 3261 13.3.1.4).
    public mutating func responseUnacknowledged(_ response: SIPMessage) -> [Action] {
        guard response.statusCode.map({ (200..<300).contains($0) }) == true, let call, response.callID == call.invite.callID,
            case .answered = callState
        else { return [] }
        return [.log("no ACK for the answer to \(call.dialog.callID)")] + hangUp()
    }

    mutating func incomingAck(_ ack: SIPMessage) -> [Action] {
        // ACKs are never answered; one for a call that is over (e.g. for our 487) is absorbed.
        guard call?.invite.callID == ack.callID, case .answered(let callID) = callState else {
            return [.log("absorbed \(ack.summary)")]
        }
        callState = .inCall(callID: callID)
        return [.report(.callEstablished(callID: callID)), .log("in call \(callID)")]
    }

    mutating func incomingBye(_ bye: SIPMessage) -> [Action] {
        guard let call, call.invite.callID == bye.callID, bye.toTag == call.localTag else {
            return [.send(.response(to: bye, statusCode: 481))]
        }
        var actions: [Action] = [.send(.response(to: bye, statusCode: 200))]
        if case .ringing = callState {
            actions.append(.send(response(to: call.invite, statusCode: 487, localTag: call.localTag)))
        }
        return actions + endCall(call, reason: "remote hung up")
    }

    mutating func incomingCancel(_ cancel: SIPMessage) -> [Action] {
        guard let call, call.invite.callID == cancel.callID, call.invite.cseq?.number == cancel.cseq?.number else {
            return [.send(.response(to: cancel, statusCode: 481, toTag: SIPIdentifiers.tag()))]
        }
        let ok = SIPMessage.response(to: cancel, statusCode: 200, toTag: call.localTag)
        guard case .ringing = callState else { return [.send(ok)] }
        let terminated = response(to: call.invite, statusCode: 487, localTag: call.localTag)
        return [.send(ok), .send(terminated)] + endCall(call, reason: "cancelled")
    }

    mutating func byeResponse(_ response: SIPMessage) -> [Action] {
        guard let call, response.callID == call.invite.callID, case .hangingUp = callState,
            let status = response.statusCode, status >= 200
        else { return [] }
        return endCall(call, reason: "hung up")
    }

    mutating func endCall(_ call: IncomingCall, reason: String) -> [Action] {
        let callID = call.dialog.callID
        self.call = nil
        callState = .idle
        return [.cancelTimer(.answer), .report(.callEnded(callID: callID, reason: reason)), .log("call \(callID) ended: \(reason)")]
    }

    /// A response to the INVITE with our To tag and, for 1xx/2xx, our Contact.
    private func response(to invite: SIPMessage, statusCode: Int, localTag: String) -> SIPMessage {
        var response = SIPMessage.response(to: invite, statusCode: statusCode, toTag: localTag)
        if statusCode < 300 {
            response.headers.add("Contact", configuration.contact)
        }
        return response
    }

    private func answerResponse(to invite: SIPMessage, localTag: String) -> SIPMessage {
        var ok = response(to: invite, statusCode: 200, localTag: localTag)
        ok.attachSessionDescription(SIPSessionDescription.audio(user: configuration.user, port: configuration.rtpPort))
        return ok
    }
}

extension SIPCaller {
    mutating func receiveResponse(_ response: SIPMessage) -> [Action] {
        guard let status = response.statusCode, let method = response.cseq?.method else { return [] }
        var actions: [Action] = [
            .report(.response(statusCode: status, reasonPhrase: response.reasonPhrase ?? "", method: method)),
            .log("received \(response.summary)"),
        ]
        switch method {
        case .invite:
            actions += inviteResponse(response, status: status)
        case .bye where state == .hangingUp && status >= 200:
            state = .ended(.answered)
            actions.append(.report(.ended(.answered)))
        default:
            break
        }
        return actions
    }

    private mutating func inviteResponse(_ response: SIPMessage, status: Int) -> [Action] {
        switch status {
        case 100..<200:
            guard isAwaitingAnswer else { return [] }
            state = .proceeding(statusCode: status)
            return cancelRequested && !cancelSent ? sendCancel() : []
        case 200..<300:
            return answered(by: response)
        default:
            guard isAwaitingAnswer, let ack = requestInInviteTransaction(.ack, to: response.headers["To"]) else {
                return []
            }
            // That ACK belongs to the INVITE transaction (RFC 3261 17.1.1.3), hence the same branch.
            let outcome = Outcome.notAnswered(statusCode: status)
            state = .ended(outcome)
            return [.send(ack), .report(.ended(outcome))]
        }
    }

    private mutating func answered(by response: SIPMessage) -> [Action] {
        guard let invite, let inviteCSeq = invite.cseq?.number else { return [] }
        if let dialog {
            // A retransmitted 2xx: the ACK was lost, send it again.
            return [.send(dialog.request(.ack, cseq: inviteCSeq, via: configuration.newVia()))]
        }
        guard let dialog = SIPDialog(asCallerOf: invite, response: response) else {
            return [.log("2xx without the headers a dialog needs: \(response.summary)")]
        }
        self.dialog = dialog
        let ack = dialog.request(.ack, cseq: inviteCSeq, via: configuration.newVia())
        state = .inCall
        var actions: [Action] = [.send(ack), .report(.answered), .log("answered")]
        if cancelRequested {
            // Our CANCEL crossed the answer: the call exists now, so end it properly.
            return actions + hangUp()
        }
        if let holdTime = configuration.holdTime {
            actions.append(.startTimer(.hangUp, after: holdTime))
        }
        return actions
    }

    mutating func incomingBye(_ bye: SIPMessage) -> [Action] {
        guard let dialog, bye.fromTag == dialog.remoteTag else {
            return [.send(.response(to: bye, statusCode: 481))]
        }
        return end([.send(.response(to: bye, statusCode: 200)), .log("remote hung up")])
    }

    mutating func sendCancel() -> [Action] {
        guard !cancelSent, let cancel = requestInInviteTransaction(.cancel, to: invite?.headers["To"]) else { return [] }
        cancelSent = true
        return [.send(cancel), .log("cancelling")]
    }

    /// CANCEL, or ACK for a failure: same Request-URI, top Via, From, Call-ID, CSeq number and
    /// Route as the INVITE (RFC 3261 9.1, 17.1.1.3).
    func requestInInviteTransaction(_ method: SIPMethod, to: String?) -> SIPMessage? {
        guard let invite, let via = invite.headers.values("Via").first, let from = invite.headers["From"], let to,
            let cseq = invite.cseq
        else { return nil }
        return .userAgentRequest(
            method, uri: configuration.target, via: via, from: from, to: to, callID: callID, cseq: cseq.number,
            routes: invite.headers.values("Route"))
    }
}

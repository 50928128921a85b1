extension SIPProxyRouter {
    /// A request outside a dialog: to the connection of the user in the Request-URI.
    mutating func routeInitial(_ request: SIPMessage, from connection: ConnectionID, at now: ContinuousClock.Instant) -> [Output] {
        guard let user = request.requestURI?.user else {
            let status = request.method == .options ? 200 : 404
            return [.send(.response(to: request, statusCode: status, toTag: SIPIdentifiers.tag()), to: connection)]
        }
        guard let binding = liveBinding(for: user, at: now) else {
            return [
                .send(.response(to: request, statusCode: 404, toTag: SIPIdentifiers.tag()), to: connection),
                .note("no binding for \(user)"),
            ]
        }
        var outgoing = request
        // As Kamailio's lookup() does: the registered Contact becomes the Request-URI.
        outgoing.requestURI = binding.contact.uri
        guard request.method == .invite else {
            return [forward(outgoing, from: connection, to: binding.connection, at: now)]
        }
        outgoing.headers.addFirst("Record-Route", recordRoute(transport: transport(of: connection)))
        if let callID = request.callID {
            dialogs[callID] = Dialog(caller: connection, callee: binding.connection, callerTag: request.fromTag)
        }
        return [
            .send(.response(to: request, statusCode: 100), to: connection),
            forward(outgoing, from: connection, to: binding.connection, at: now),
        ]
    }

    /// A request inside a dialog: to the other side's connection.
    mutating func routeInDialog(_ request: SIPMessage, from connection: ConnectionID, at now: ContinuousClock.Instant) -> [Output] {
        guard let callID = request.callID, let dialog = dialogs[callID] else {
            if request.method == .ack { return [.note("dropped ACK for an unknown dialog")] }
            return [.send(.response(to: request, statusCode: 481, toTag: SIPIdentifiers.tag()), to: connection)]
        }
        let target = request.fromTag == dialog.callerTag ? dialog.callee : dialog.caller
        return [forward(request, from: connection, to: target, at: now)]
    }

    /// CANCEL is answered here and sent on with the branch of the INVITE it cancels
    /// (RFC 3261 16.10), so the callee can match it.
    mutating func cancel(_ request: SIPMessage, from connection: ConnectionID, at now: ContinuousClock.Instant) -> [Output] {
        guard let (key, transaction) = inviteTransaction(matching: request) else {
            return [.send(.response(to: request, statusCode: 481, toTag: SIPIdentifiers.tag()), to: connection)]
        }
        var cancel = request
        cancel.requestURI = transaction.forwarded.requestURI
        return [
            .send(.response(to: request, statusCode: 200, toTag: SIPIdentifiers.tag()), to: connection),
            forward(cancel, from: connection, to: transaction.target, branch: key.branch, at: now),
        ]
    }

    /// The ACK for a failure response belongs to the INVITE transaction: it goes to the callee
    /// with the INVITE's branch, and ends the transaction.
    mutating func acknowledgeFailure(_ request: SIPMessage, at now: ContinuousClock.Instant) -> [Output] {
        guard let (key, transaction) = inviteTransaction(matching: request) else { return [] }
        transactions[key] = nil
        var ack = request
        ack.requestURI = transaction.forwarded.requestURI
        return [forward(ack, from: transaction.source, to: transaction.target, branch: key.branch, at: now)]
    }
}

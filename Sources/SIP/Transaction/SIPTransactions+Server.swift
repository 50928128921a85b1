// Server transactions (RFC 3261 17.2): requests this side received, and its responses.
extension SIPTransactions {
    mutating func receiveRequest(_ request: SIPMessage, from flow: Flow, over transport: SIPTransport, at now: ContinuousClock.Instant) -> [Output] {
        guard let key = ServerKey(request) else { return [.deliver(request, from: flow)] }
        if request.method == .ack { return receiveAck(request, key: key, from: flow, at: now) }
        if let transaction = servers[key] {
            guard let response = transaction.lastResponse else {
                return [.note("absorbed a retransmitted \(request.summary): not answered yet")]
            }
            return [.transmit(response, to: flow), .note("answered a retransmitted \(request.summary) again")]
        }
        guard count < maximumCount else { return [.note("dropped \(request.summary): \(maximumCount) transactions are open")] }
        storeServer(key, ServerTransaction(
            request: request, flow: flow, transport: transport, interval: timers.t1, endAt: now + maximumLifetime))
        return [.deliver(request, from: flow)]
    }

    private mutating func receiveAck(_ ack: SIPMessage, key: ServerKey, from flow: Flow, at now: ContinuousClock.Instant) -> [Output] {
        if var transaction = servers[key] {
            switch transaction.state {
            case .completed:
                // Timer I: later copies of this ACK are absorbed.
                transaction.state = .confirmed
                transaction.retransmitAt = nil
                transaction.endAt = now + lingering(transaction.transport)
                if transaction.endAt <= now { removeServer(key) } else { storeServer(key, transaction) }
                return [.deliver(ack, from: flow)]
            case .confirmed:
                return [.note("absorbed a retransmitted \(ack.summary)")]
            case .accepted:
                // An ACK for the 2xx that reuses the INVITE's branch, as some agents do.
                transaction.acknowledged = true
                transaction.retransmitAt = nil
                storeServer(key, transaction)
                return [.deliver(ack, from: flow)]
            case .trying, .proceeding:
                return [.deliver(ack, from: flow)]
            }
        }
        // The ACK for a 2xx is a transaction of its own (new branch): it stops the user
        // agent's retransmissions of that 2xx, found by Call-ID and CSeq number.
        if retransmitsSuccessResponses,
            let (key, transaction) = servers.first(where: {
                $0.value.state == .accepted && !$0.value.acknowledged && $0.value.request.callID == ack.callID
                    && $0.value.request.cseq?.number == ack.cseq?.number
            })
        {
            var acknowledged = transaction
            acknowledged.acknowledged = true
            acknowledged.retransmitAt = nil
            storeServer(key, acknowledged)
        }
        return [.deliver(ack, from: flow)]
    }

    mutating func sendResponse(_ response: SIPMessage, to flow: Flow?, over transport: SIPTransport, at now: ContinuousClock.Instant) -> [Output] {
        guard let key = ServerKey(response: response), var transaction = servers[key], let status = response.statusCode else {
            guard let flow else { return [.note("dropped \(response.summary): no transaction to answer")] }
            return [.transmit(response, to: flow)]
        }
        let unreliable = !transaction.transport.isReliable
        transaction.lastResponse = response
        switch (transaction.isInvite, status) {
        case (_, 100..<200):
            if transaction.state == .trying { transaction.state = .proceeding }
        case (true, 200..<300):
            // RFC 6026's accepted state, for timer L; a user agent's core sends its 2xx again
            // until the ACK (RFC 3261 13.3.1.4).
            if transaction.state != .accepted {
                transaction.state = .accepted
                transaction.endAt = now + timers.transactionTimeout
                if retransmitsSuccessResponses && unreliable {
                    transaction.retransmitAt = now + timers.t1
                    transaction.interval = timers.t1
                }
            }
        case (true, _):
            // Timer G (UDP) and H.
            if transaction.state == .trying || transaction.state == .proceeding {
                transaction.state = .completed
                transaction.endAt = now + timers.transactionTimeout
                transaction.retransmitAt = unreliable ? now + timers.t1 : nil
                transaction.interval = timers.t1
            }
        case (false, _):
            // Timer J.
            transaction.state = .completed
            transaction.endAt = now + (unreliable ? timers.transactionTimeout : .zero)
        }
        if transaction.endAt <= now {
            removeServer(key)
        } else {
            storeServer(key, transaction)
        }
        return [.transmit(response, to: transaction.flow)]
    }

    mutating func serverTimerFired(_ key: ServerKey, at now: ContinuousClock.Instant) -> [Output] {
        guard var transaction = servers[key] else { return [] }
        if now >= transaction.endAt {
            removeServer(key)
            guard let response = transaction.lastResponse else {
                return [.note("forgot \(transaction.request.summary): never answered")]
            }
            switch transaction.state {
            case .completed where transaction.isInvite:
                return [.note("no ACK for \(response.summary) (timer H)"), .unacknowledged(response)]
            case .accepted where retransmitsSuccessResponses && !transaction.acknowledged:
                return [.note("no ACK for \(response.summary) (timer L)"), .unacknowledged(response)]
            default:
                return []
            }
        }
        guard let retransmitAt = transaction.retransmitAt, now >= retransmitAt, let response = transaction.lastResponse else {
            storeServer(key, transaction)
            return []
        }
        // Timer G, and the 2xx's own, double up to T2.
        transaction.interval = min(transaction.interval * 2, timers.t2)
        transaction.retransmitAt = now + transaction.interval
        storeServer(key, transaction)
        return [.transmit(response, to: transaction.flow), .note("retransmitted \(response.summary)")]
    }

    mutating func storeServer(_ key: ServerKey, _ transaction: ServerTransaction) {
        servers[key] = transaction
        deadlines.arm(.server(key), at: transaction.deadline)
    }

    mutating func removeServer(_ key: ServerKey) {
        servers[key] = nil
        deadlines.disarm(.server(key))
    }
}

extension SIPTransactions.ServerKey {
    /// The key of the request a response answers: the same top Via, and its CSeq's method.
    init?(response: SIPMessage) {
        guard let via = response.topVia, let branch = via.branch, !branch.isEmpty, let method = response.cseq?.method else { return nil }
        self.branch = branch
        self.sentBy = via.port.map { "\(via.host.lowercased()):\($0)" } ?? via.host.lowercased()
        self.method = method
    }
}

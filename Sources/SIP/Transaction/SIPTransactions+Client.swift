// Client transactions (RFC 3261 17.1): requests this side sent, and their responses.
extension SIPTransactions {
    mutating func sendRequest(_ request: SIPMessage, to flow: Flow, over transport: SIPTransport, at now: ContinuousClock.Instant) -> [Output] {
        guard let branch = request.topVia?.branch, !branch.isEmpty, let method = request.method else {
            return [.transmit(request, to: flow)]
        }
        if method == .ack {
            let key = ClientKey(branch: branch, method: .invite)
            if var transaction = clients[key], transaction.state == .completed {
                transaction.ack = request
                clients[key] = transaction
            }
            return [.transmit(request, to: flow)]
        }
        guard count < maximumCount else {
            return [.transmit(request, to: flow), .note("\(request.summary) sent without a transaction: \(maximumCount) are open")]
        }
        let key = ClientKey(branch: branch, method: method)
        storeClient(key, ClientTransaction(
            request: request, flow: flow, transport: transport, startedAt: now,
            retransmitAt: transport.isReliable ? nil : now + timers.t1, interval: timers.t1,
            endAt: now + timers.transactionTimeout))
        return [.transmit(request, to: flow)]
    }

    mutating func receiveResponse(_ response: SIPMessage, from flow: Flow, at now: ContinuousClock.Instant) -> [Output] {
        guard let branch = response.topVia?.branch, let method = response.cseq?.method, let status = response.statusCode,
            var transaction = clients[ClientKey(branch: branch, method: method)]
        else { return [.deliver(response, from: flow)] }
        let key = ClientKey(branch: branch, method: method)
        switch (transaction.state, status) {
        case (.waiting, 100..<200), (.proceeding, 100..<200):
            transaction.state = .proceeding
            if transaction.isInvite {
                // Timer A and B stop: the INVITE is ringing, for as long as the user lets it.
                transaction.retransmitAt = nil
                transaction.endAt = transaction.startedAt + maximumLifetime
            } else if transaction.retransmitAt != nil {
                // Timer E goes on, every T2 (RFC 3261 17.1.2.2).
                transaction.interval = timers.t2
            }
            storeClient(key, transaction)
            return [.deliver(response, from: flow)]
        case (.completed, _) where transaction.isInvite && status >= 300:
            guard let ack = transaction.ack else { return [.note("absorbed a retransmitted \(response.summary)")] }
            return [.transmit(ack, to: transaction.flow), .note("acknowledged a retransmitted \(response.summary) again")]
        case (.completed, _), (.accepted, 100..<200):
            return [.note("absorbed \(response.summary): its transaction is complete")]
        case (.accepted, _) where status >= 300:
            return [.note("absorbed \(response.summary) after a 2xx")]
        default:
            return finalResponse(response, status: status, key: key, transaction, from: flow, at: now)
        }
    }

    private mutating func finalResponse(
        _ response: SIPMessage, status: Int, key: ClientKey, _ transaction: ClientTransaction, from flow: Flow,
        at now: ContinuousClock.Instant
    ) -> [Output] {
        var transaction = transaction
        transaction.retransmitAt = nil
        if transaction.isInvite && status < 300 {
            // RFC 6026: accepted for timer M; more 2xx pass to the user, which acknowledges each.
            if transaction.state != .accepted { transaction.endAt = now + timers.transactionTimeout }
            transaction.state = .accepted
        } else if transaction.isInvite {
            // Timer D: retransmitted failures are acknowledged again.
            transaction.state = .completed
            transaction.endAt = now + (transaction.transport.isReliable ? .zero : timers.transactionTimeout)
        } else {
            // Timer K.
            transaction.state = .completed
            transaction.endAt = now + lingering(transaction.transport)
        }
        if transaction.endAt <= now {
            removeClient(key)
        } else {
            storeClient(key, transaction)
        }
        return [.deliver(response, from: flow)]
    }

    mutating func clientTimerFired(_ key: ClientKey, at now: ContinuousClock.Instant) -> [Output] {
        guard var transaction = clients[key] else { return [] }
        if now >= transaction.endAt {
            removeClient(key)
            switch transaction.state {
            case .waiting, .proceeding:
                let timer = transaction.isInvite ? (transaction.state == .waiting ? "B" : "its lifetime") : "F"
                return [
                    .note("\(transaction.request.summary) timed out (timer \(timer)): no final response"),
                    .deliver(.response(to: transaction.request, statusCode: 408), from: transaction.flow),
                ]
            case .completed, .accepted:
                return []
            }
        }
        guard let retransmitAt = transaction.retransmitAt, now >= retransmitAt else {
            storeClient(key, transaction)
            return []
        }
        // Timer A doubles without bound (B ends it); timer E doubles up to T2.
        transaction.interval = transaction.isInvite ? transaction.interval * 2 : min(transaction.interval * 2, timers.t2)
        transaction.retransmitAt = now + transaction.interval
        storeClient(key, transaction)
        return [.transmit(transaction.request, to: transaction.flow), .note("retransmitted \(transaction.request.summary)")]
    }

    mutating func storeClient(_ key: ClientKey, _ transaction: ClientTransaction) {
        clients[key] = transaction
        deadlines.arm(.client(key), at: transaction.deadline)
    }

    mutating func removeClient(_ key: ClientKey) {
        clients[key] = nil
        deadlines.disarm(.client(key))
    }
}

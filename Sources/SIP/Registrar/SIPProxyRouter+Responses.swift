extension SIPProxyRouter {
    /// Sends a response back along the Vias: pops this proxy's Via and relays the response to
    /// the connection the request came from (RFC 3261 16.7).
    mutating func relayResponse(_ response: SIPMessage) -> [Output] {
        guard let branch = response.topVia?.branch, let method = response.cseq?.method, let status = response.statusCode,
            let transaction = transactions[TransactionKey(branch: branch, method: method)]
        else { return [.note("dropped \(response.summary): no transaction for its Via")] }
        // We answered 100 Trying ourselves when we forwarded the INVITE, and 200 to the CANCEL
        // when it reached us.
        if status == 100 { return [] }
        if transaction.finalStatus != nil, !(200..<300).contains(status) {
            return [.note("absorbed \(response.summary): the transaction already has a final response")]
        }
        if method == .cancel {
            transactions[TransactionKey(branch: branch, method: method)] = nil
            return []
        }
        var relayed = response
        relayed.headers.removeFirstValue("Via")
        if status >= 200 {
            finish(TransactionKey(branch: branch, method: method), transaction, status: status)
        }
        return [.send(relayed, to: transaction.source)]
    }

    // A 2xx to INVITE keeps its transaction, for a retransmitted 2xx; a failure keeps it for
    // the ACK; anything else is over.
    private mutating func finish(_ key: TransactionKey, _ transaction: Transaction, status: Int) {
        switch key.method {
        case .invite:
            transactions[key]?.finalStatus = status
            if status >= 300 { dialogs[transaction.callID] = nil }
        case .bye:
            dialogs[transaction.callID] = nil
            transactions[key] = nil
        default:
            transactions[key] = nil
        }
    }
}

/// The registrar/proxy's decisions, without I/O: a message arrives on a flow (a TCP
/// connection, or a UDP peer's address), and the router says which messages go out on which
/// flows. Retransmissions and timeouts are the transaction layer's (``SIPTransactions``),
/// between the router and the sockets.
///
/// Like Kamailio with voipd's configuration, it reaches a user only over the flow its
/// REGISTER came on (the Contact host is ignored: for UDP, the REGISTER's source address, as
/// `fix_nated_register` makes it), never opens a connection, record-routes INVITEs, answers
/// 100 Trying itself, and routes CANCEL, ACK and in-dialog requests over the flows of the
/// dialog. Bindings are keyed by user part (Kamailio's `use_domain=0`); one binding per user,
/// the latest REGISTER wins.
struct SIPProxyRouter {
    typealias ConnectionID = Int

    enum Output: Hashable, Sendable {
        case send(SIPMessage, to: ConnectionID)
        /// Something dropped or refused, for the observer.
        case note(String)
    }

    struct Binding: Hashable {
        let connection: ConnectionID
        let contact: SIPNameAddress
        let expiresAt: ContinuousClock.Instant
    }

    /// A request this proxy forwarded, found again by the branch of its own Via.
    struct Transaction: Hashable {
        let source: ConnectionID
        let target: ConnectionID
        let callID: String
        let incomingBranch: String?
        /// For INVITE: the request as forwarded, to send CANCEL and ACK after it.
        let forwarded: SIPMessage
        let createdAt: ContinuousClock.Instant
        /// The final response relayed, once there is one.
        var finalStatus: Int?
    }

    struct TransactionKey: Hashable {
        let branch: String
        let method: SIPMethod
    }

    /// The two connections of a call and which side is the caller.
    struct Dialog: Hashable {
        let caller: ConnectionID
        let callee: ConnectionID
        let callerTag: String?
    }

    /// The longest registration granted, and the one granted when none is asked for.
    static let defaultMaximumExpires = 3600
    // Long enough for any INVITE to be answered or given up; bounds the table otherwise.
    static let transactionLifetime: Duration = .seconds(300)

    let host: String
    let port: UInt16
    /// The longest registration granted (Kamailio's `max_expires`).
    let maximumExpires: Int
    /// The transport of each flow; TCP unless said otherwise.
    var flowTransports: [ConnectionID: SIPTransport] = [:]
    var bindings: [String: Binding] = [:]
    var transactions: [TransactionKey: Transaction] = [:]
    var dialogs: [String: Dialog] = [:]
    /// When the oldest transaction expires. The table is swept then, not on every message:
    /// INVITE transactions stay for their whole lifetime, and a sweep per message cost time
    /// in proportion to every INVITE of the last five minutes.
    var nextSweep: ContinuousClock.Instant?

    init(host: String, port: UInt16, maximumExpires: Int = SIPProxyRouter.defaultMaximumExpires) {
        self.host = host
        self.port = port
        self.maximumExpires = maximumExpires
    }

    /// The transport of `flow`.
    func transport(of flow: ConnectionID) -> SIPTransport { flowTransports[flow] ?? .tcp }

    /// Handles a message that arrived on `connection`.
    mutating func handle(_ message: SIPMessage, from connection: ConnectionID, at now: ContinuousClock.Instant) -> [Output] {
        sweepExpiredTransactions(at: now)
        guard let method = message.method else { return relayResponse(message) }
        if method != .ack, method != .register, message.maxForwards == 0 {
            return [.send(.response(to: message, statusCode: 483, toTag: SIPIdentifiers.tag()), to: connection)]
        }
        switch method {
        case .register:
            return register(message, from: connection, at: now)
        case .cancel:
            return cancel(message, from: connection, at: now)
        case .ack where message.toTag != nil && inviteTransaction(matching: message) != nil:
            return acknowledgeFailure(message, at: now)
        default:
            var request = message
            popOwnRoute(&request)
            if request.toTag != nil { return routeInDialog(request, from: connection, at: now) }
            return routeInitial(request, from: connection, at: now)
        }
    }

    /// Forgets everything that used `connection`, which has closed, and answers 480 to
    /// INVITEs that were forwarded over it and not answered yet: the callee's connection may
    /// die after the binding was looked up.
    mutating func connectionClosed(_ connection: ConnectionID) -> [Output] {
        let lost = bindings.filter { $0.value.connection == connection }.map(\.key)
        for user in lost { bindings[user] = nil }
        var outputs: [Output] = lost.sorted().map { .note("binding of \($0) removed: its connection closed") }
        let unanswered = transactions.values.filter {
            $0.target == connection && $0.source != connection && $0.forwarded.method == .invite && $0.finalStatus == nil
        }
        for transaction in unanswered {
            let unavailable = SIPMessage.response(to: transaction.forwarded, statusCode: 480, toTag: SIPIdentifiers.tag())
            outputs += relayResponse(unavailable)
        }
        transactions = transactions.filter { $0.value.source != connection && $0.value.target != connection }
        dialogs = dialogs.filter { $0.value.caller != connection && $0.value.callee != connection }
        flowTransports[connection] = nil
        return outputs
    }

    /// Forgets the transactions older than their lifetime, once the oldest is.
    private mutating func sweepExpiredTransactions(at now: ContinuousClock.Instant) {
        guard let nextSweep, now >= nextSweep else { return }
        transactions = transactions.filter { now - $0.value.createdAt < Self.transactionLifetime }
        self.nextSweep = transactions.values.lazy.map(\.createdAt).min().map { $0 + Self.transactionLifetime }
    }

    /// The Via this proxy puts on a request it forwards over `transport`.
    func via(branch: String, transport: SIPTransport = .tcp) -> String { "SIP/2.0/\(transport) \(host):\(port);branch=\(branch)" }

    /// The Record-Route this proxy puts on an INVITE that came over `transport`, so in-dialog
    /// requests come through it.
    func recordRoute(transport: SIPTransport = .tcp) -> String {
        "<sip:\(host):\(port);transport=\(transport.parameterValue);lr>"
    }

    /// Forwards `request` to `target` with this proxy's Via on top (a new branch unless one is
    /// given) and Max-Forwards decremented, remembering the transaction unless it is an ACK.
    mutating func forward(
        _ request: SIPMessage, from source: ConnectionID, to target: ConnectionID, branch: String = SIPIdentifiers.branch(),
        at now: ContinuousClock.Instant
    ) -> Output {
        var forwarded = request
        forwarded.headers.addFirst("Via", via(branch: branch, transport: transport(of: target)))
        forwarded.headers.set("Max-Forwards", "\(max(0, (request.maxForwards ?? 71) - 1))")
        if let method = request.method, method != .ack, let callID = request.callID {
            transactions[TransactionKey(branch: branch, method: method)] = Transaction(
                source: source, target: target, callID: callID, incomingBranch: request.topVia?.branch,
                forwarded: forwarded, createdAt: now)
            if nextSweep == nil { nextSweep = now + Self.transactionLifetime }
        }
        return .send(forwarded, to: target)
    }

    /// The INVITE transaction a CANCEL or a failure's ACK belongs to: same Call-ID and the
    /// same branch in the top Via as the INVITE had when it reached us.
    func inviteTransaction(matching request: SIPMessage) -> (key: TransactionKey, value: Transaction)? {
        guard let branch = request.topVia?.branch else { return nil }
        return transactions.first {
            $0.key.method == .invite && $0.value.callID == request.callID && $0.value.incomingBranch == branch
        }
    }

    private func popOwnRoute(_ request: inout SIPMessage) {
        guard let top = request.routes.first, top.uri.host == host, top.uri.port == port else { return }
        request.headers.removeFirstValue("Route")
    }
}

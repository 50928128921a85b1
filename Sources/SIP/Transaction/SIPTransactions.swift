/// The transaction layer of RFC 3261 17, as a pure state machine between a transaction user
/// (a user agent's core, or the proxy's router) and the transport: every message the user
/// sends goes through ``send(_:to:over:at:)``, every message received through
/// ``receive(_:from:over:at:)``, and ``expire(at:)`` runs the timers once ``nextDeadline``
/// has passed. Nothing here does I/O; the ``Output``s say what to put on the wire and what
/// to hand to the user.
///
/// The same code serves both transports; only the timers differ:
/// - over UDP, requests are retransmitted until a response comes (timers A and E), final
///   responses to INVITE until the ACK comes (G, and for a user agent the 2xx as RFC 3261
///   13.3.1.4 asks of its core), and retransmissions received are absorbed or answered with
///   the last response (J, and D, I, K after the end);
/// - over TCP nothing is retransmitted, but a request still times out (B, F: the user gets a
///   408 built here, as RFC 3261 8.1.3.1 says) and a final response to INVITE still waits for
///   its ACK (H).
///
/// The ACK for a failure is built by the user (it knows the To tag and the route set); it
/// belongs to the INVITE's client transaction, which sends it again for each retransmitted
/// failure. The first ACK for a failure received is handed to the user as well, which a
/// proxy that relays it hop by hop needs. Transactions follow RFC 6026: a 2xx leaves an
/// INVITE transaction in an accepted state for 64×T1, where the 2xx retransmissions pass
/// through (client) and INVITE retransmissions get the 2xx again (server).
///
/// `Flow` names where a message came from or goes to: a connection, or a peer's address for
/// datagrams. Responses are sent to the flow their request came from.
public struct SIPTransactions<Flow: Hashable & Sendable>: Sendable {
    /// What the layer asks its driver to do.
    public enum Output: Hashable, Sendable {
        /// Put this message on the wire to `flow` (the first time or again).
        case transmit(SIPMessage, to: Flow)
        /// Hand this message to the transaction user: a new request, a response, or a 408
        /// for a request that timed out.
        case deliver(SIPMessage, from: Flow)
        /// A final response to INVITE that no ACK acknowledged before timer H (failures) or
        /// L (a user agent's 2xx): the call it answered should end.
        case unacknowledged(SIPMessage)
        /// A retransmission, an absorbed message, a timeout: for the log.
        case note(String)
    }

    /// The timer values.
    public let timers: SIPTimerValues
    /// Whether 2xx responses to INVITE are retransmitted until their ACK: a user agent
    /// server's core does this over UDP (RFC 3261 13.3.1.4); a proxy does not, since the
    /// user agent behind it does.
    public let retransmitsSuccessResponses: Bool
    /// The most transactions kept at once; a new request beyond it is dropped.
    public let maximumCount: Int
    /// The longest a transaction may wait for its user or its peer (an INVITE ringing, a
    /// request never answered) before it is forgotten.
    public let maximumLifetime: Duration

    var clients: [ClientKey: ClientTransaction] = [:]
    var servers: [ServerKey: ServerTransaction] = [:]
    var deadlines = DeadlineQueue<TransactionID>()

    /// A layer with no transaction yet.
    public init(
        timers: SIPTimerValues = .standard, retransmitsSuccessResponses: Bool, maximumCount: Int = 4096,
        maximumLifetime: Duration = .seconds(300)
    ) {
        self.timers = timers
        self.retransmitsSuccessResponses = retransmitsSuccessResponses
        self.maximumCount = maximumCount
        self.maximumLifetime = maximumLifetime
    }

    /// How many transactions are open.
    public var count: Int { clients.count + servers.count }

    /// When ``expire(at:)`` has something to do next.
    public mutating func nextDeadline() -> ContinuousClock.Instant? { deadlines.earliest() }

    /// A message the user sends. A request other than ACK starts a client transaction on
    /// `flow`; a response goes to the flow its request came from (`flow` may be nil), and
    /// moves that request's server transaction on.
    public mutating func send(_ message: SIPMessage, to flow: Flow?, over transport: SIPTransport, at now: ContinuousClock.Instant) -> [Output] {
        if message.isRequest {
            guard let flow else { return [.note("not sent, no destination: \(message.summary)")] }
            return sendRequest(message, to: flow, over: transport, at: now)
        }
        return sendResponse(message, to: flow, over: transport, at: now)
    }

    /// A message read from `flow`: a retransmission is absorbed or answered here; anything
    /// else is delivered to the user.
    public mutating func receive(_ message: SIPMessage, from flow: Flow, over transport: SIPTransport, at now: ContinuousClock.Instant) -> [Output] {
        message.isRequest ? receiveRequest(message, from: flow, over: transport, at: now) : receiveResponse(message, from: flow, at: now)
    }

    /// Runs the timers due at `now`: retransmissions, timeouts, ends.
    public mutating func expire(at now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
        for id in deadlines.takeDue(at: now) {
            switch id {
            case .client(let key): outputs += clientTimerFired(key, at: now)
            case .server(let key): outputs += serverTimerFired(key, at: now)
            }
        }
        return outputs
    }

    /// Forgets every transaction on `flow`, a connection that has closed: nothing more can
    /// be sent or received on it. The user learns of the loss from the transport.
    public mutating func flowClosed(_ flow: Flow) {
        for (key, transaction) in clients where transaction.flow == flow {
            clients[key] = nil
            deadlines.disarm(.client(key))
        }
        for (key, transaction) in servers where transaction.flow == flow {
            servers[key] = nil
            deadlines.disarm(.server(key))
        }
    }
}

extension SIPTransactions {
    enum TransactionID: Hashable, Sendable {
        case client(ClientKey)
        case server(ServerKey)
    }

    /// A client transaction is found again by the branch of the Via it put on top, and the
    /// method (RFC 3261 17.1.3).
    struct ClientKey: Hashable, Sendable {
        let branch: String
        let method: SIPMethod
    }

    /// A server transaction is found again by the top Via's branch and sent-by, and the
    /// method, ACK standing for INVITE (RFC 3261 17.2.3).
    struct ServerKey: Hashable, Sendable {
        let branch: String
        let sentBy: String
        let method: SIPMethod

        init?(_ request: SIPMessage) {
            guard let via = request.topVia, let branch = via.branch, !branch.isEmpty, let method = request.method else { return nil }
            self.branch = branch
            self.sentBy = via.port.map { "\(via.host.lowercased()):\($0)" } ?? via.host.lowercased()
            self.method = method == .ack ? .invite : method
        }
    }

    struct ClientTransaction: Sendable {
        enum State: Sendable {
            /// No response yet (INVITE: calling; other requests: trying).
            case waiting
            /// A provisional response came.
            case proceeding
            /// A final failure (INVITE) or any final response (others) came; retransmissions
            /// of it are absorbed until the end.
            case completed
            /// A 2xx to INVITE came; more 2xx pass to the user until the end (RFC 6026).
            case accepted
        }

        let request: SIPMessage
        let flow: Flow
        let transport: SIPTransport
        let startedAt: ContinuousClock.Instant
        var state = State.waiting
        /// When to send the request again, and the interval after that (UDP only).
        var retransmitAt: ContinuousClock.Instant?
        var interval: Duration
        /// When the transaction times out (B, F) or ends (D, K, M, or its lifetime).
        var endAt: ContinuousClock.Instant
        /// The user's ACK for a failure, sent again for each retransmitted failure.
        var ack: SIPMessage?

        var isInvite: Bool { request.method == .invite }
        var deadline: ContinuousClock.Instant { retransmitAt.map { min($0, endAt) } ?? endAt }
    }

    struct ServerTransaction: Sendable {
        enum State: Sendable {
            /// No response from the user yet.
            case trying
            /// A provisional response was sent.
            case proceeding
            /// A final response was sent (a failure, for INVITE).
            case completed
            /// INVITE: the ACK for the failure came; its retransmissions are absorbed.
            case confirmed
            /// INVITE: a 2xx was sent (RFC 6026).
            case accepted
        }

        let request: SIPMessage
        let flow: Flow
        let transport: SIPTransport
        var state = State.trying
        var lastResponse: SIPMessage?
        /// When to send the last response again (G, or a user agent's 2xx), and the interval
        /// after that.
        var retransmitAt: ContinuousClock.Instant?
        var interval: Duration
        /// When the transaction ends (H, I, J, L, or its lifetime).
        var endAt: ContinuousClock.Instant
        /// Whether the ACK for a 2xx came (a user agent's accepted INVITE).
        var acknowledged = false

        var isInvite: Bool { request.method == .invite }
        var deadline: ContinuousClock.Instant { retransmitAt.map { min($0, endAt) } ?? endAt }
    }

    /// The time to absorb retransmissions after the end over `transport`: T4 over UDP, none
    /// over TCP (timers I, K).
    func lingering(_ transport: SIPTransport) -> Duration { transport.isReliable ? .zero : timers.t4 }
}

/// The calling side, as a pure state machine: it sends an INVITE, reports every response,
/// acknowledges the answer, hangs up after a hold time, and can cancel a call still ringing.
///
/// Feed it every message read from its connection with ``receive(_:)``, every timer it
/// armed with ``timerFired(_:)``, and perform the ``SIPAction``s it returns.
public struct SIPCaller: SIPUserAgent, Sendable {
    /// Whom to call and for how long.
    public struct Configuration: SIPUserAgentContact, Hashable, Sendable {
        /// The Request-URI of the INVITE, e.g. `sip:alice@127.0.0.1:5060`.
        public var target: SIPURI
        /// The caller's user part; From is `sip:USER@DOMAIN`.
        public var user: String
        /// The caller's domain, `host` or `host:port`.
        public var domain: String
        /// The transport of Via and Contact (and of the driver's socket).
        public var transport: SIPTransport
        /// The host in Contact and Via; unresolvable by default, like ``SIPCallee``'s.
        public var contactHost: String
        /// The port in Contact and Via, if any.
        public var contactPort: UInt16?
        /// How long to stay in the call once answered before sending BYE; nil to wait for
        /// ``SIPCaller/hangUp()`` or the callee's BYE.
        public var holdTime: Duration?
        /// The RTP port put in the SDP offer.
        public var rtpPort: UInt16

        /// A configuration; `contactHost` defaults to `USER.invalid`.
        public init(
            target: SIPURI, user: String, domain: String, transport: SIPTransport = .tcp, contactHost: String? = nil,
            contactPort: UInt16? = nil, holdTime: Duration? = nil, rtpPort: UInt16 = 40_002
        ) {
            self.target = target
            self.user = user
            self.domain = domain
            self.transport = transport
            self.contactHost = contactHost ?? "\(user).invalid"
            self.contactPort = contactPort
            self.holdTime = holdTime
            self.rtpPort = rtpPort
        }
    }

    /// The timers the caller asks its driver to arm.
    public enum Timer: Hashable, Sendable {
        /// The hold time is over: hang up.
        case hangUp
    }

    /// How a call ended.
    public enum Outcome: Hashable, Sendable {
        case answered
        /// Not answered: the final status (487 after a CANCEL), or nil if none came.
        case notAnswered(statusCode: Int?)
    }

    /// What the caller tells the application.
    public enum Event: Hashable, Sendable {
        /// Any response, provisional or final, to any request the caller sent.
        case response(statusCode: Int, reasonPhrase: String, method: SIPMethod)
        case answered
        case ended(Outcome)
    }

    /// Where the call stands.
    public enum State: Hashable, Sendable {
        case idle
        /// INVITE sent, no response yet.
        case calling
        /// A provisional response (1xx) came.
        case proceeding(statusCode: Int)
        case inCall
        /// BYE sent; waiting for its response.
        case hangingUp
        case ended(Outcome)
    }

    /// What the caller asks its driver to do.
    public typealias Action = SIPAction<Timer, Event>

    /// Whom it calls and for how long.
    public let configuration: Configuration
    /// Where the call stands.
    public internal(set) var state: State = .idle

    let callID: String
    let fromTag = SIPIdentifiers.tag()
    var invite: SIPMessage?
    var dialog: SIPDialog?
    var cancelRequested = false
    var cancelSent = false

    /// A caller that has not called yet; call ``call()`` to start.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.callID = SIPIdentifiers.callID(host: configuration.contactHost)
    }

    /// The outcome once the call is over.
    public var outcome: Outcome? {
        if case .ended(let outcome) = state { outcome } else { nil }
    }

    /// Whether the call was answered (a 2xx to the INVITE came).
    public var wasAnswered: Bool { dialog != nil }

    /// Sends the INVITE.
    public mutating func call() -> [Action] {
        guard state == .idle else { return [.log("call already placed")] }
        let target = configuration.target
        var invite = SIPMessage.userAgentRequest(
            .invite, uri: target, via: configuration.newVia(),
            from: "<sip:\(configuration.user)@\(configuration.domain)>;tag=\(fromTag)", to: "<\(target)>", callID: callID,
            cseq: 1, extraHeaders: [("Contact", configuration.contact), ("User-Agent", "voipd-caller")])
        invite.attachSessionDescription(SIPSessionDescription.audio(user: configuration.user, port: configuration.rtpPort))
        self.invite = invite
        state = .calling
        return [.send(invite), .log("calling \(target)")]
    }

    /// Cancels the call if it is not answered yet (RFC 3261 9.1: the CANCEL waits for a
    /// provisional response), or hangs up if it is.
    public mutating func cancel() -> [Action] {
        switch state {
        case .calling:
            cancelRequested = true
            return [.log("cancel requested; waiting for a provisional response")]
        case .proceeding:
            cancelRequested = true
            return sendCancel()
        case .inCall:
            return hangUp()
        case .idle, .hangingUp, .ended:
            return []
        }
    }

    /// Sends BYE if in a call; cancels if still ringing.
    public mutating func hangUp() -> [Action] {
        guard state == .inCall, var dialog else { return isAwaitingAnswer ? cancel() : [] }
        let bye = dialog.request(.bye, cseq: dialog.nextCSeq(), via: configuration.newVia())
        self.dialog = dialog
        state = .hangingUp
        return [.cancelTimer(.hangUp), .send(bye), .log("hanging up")]
    }

    /// Handles a message read from the connection: responses, and BYE from the callee.
    public mutating func receive(_ message: SIPMessage) -> [Action] {
        guard message.callID == callID else { return [.log("ignored \(message.summary): unknown Call-ID")] }
        guard let method = message.method else { return receiveResponse(message) }
        switch method {
        case .bye: return incomingBye(message)
        case .ack: return []
        case .options: return [.send(.response(to: message, statusCode: 200))]
        default: return [.send(.response(to: message, statusCode: 501))]
        }
    }

    /// Handles a timer it armed: the hold time is over.
    public mutating func timerFired(_ timer: Timer) -> [Action] {
        switch timer {
        case .hangUp: hangUp()
        }
    }

    /// Handles the loss of the connection: the call is over.
    public mutating func connectionLost() -> [Action] {
        switch state {
        case .ended, .idle: return []
        default: return end([.log("connection lost")])
        }
    }

    /// INVITE sent, no final response yet.
    var isAwaitingAnswer: Bool {
        switch state {
        case .calling, .proceeding: true
        default: false
        }
    }

    mutating func end(_ actions: [Action]) -> [Action] {
        let outcome: Outcome = wasAnswered ? .answered : .notAnswered(statusCode: nil)
        state = .ended(outcome)
        return actions + [.cancelTimer(.hangUp), .report(.ended(outcome))]
    }
}

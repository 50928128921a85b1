/// The softphone side of a call, as a pure state machine: it registers, is called, answers
/// after a delay, and hangs up or is hung up on.
///
/// It registers a Contact that cannot be resolved (`<sip:USER@USER.invalid;transport=tcp>`
/// by default), so the only way a proxy can reach it is the TCP connection its REGISTER
/// came on: the softphone listens on no port and may be suspended between messages.
///
/// Feed it every message read from that connection with ``receive(_:)``, every timer it
/// armed with ``timerFired(_:)``, and perform the ``SIPAction``s it returns:
///
/// ```swift
/// var callee = SIPCallee(configuration: .init(user: "alice", domain: "127.0.0.1:5060"))
/// var framer = SIPStreamFramer()
/// var timers: [SIPCallee.Timer: ContinuousClock.Instant] = [:]
/// func perform(_ actions: [SIPCallee.Action]) {
///     for action in actions {
///         switch action {
///         case .send(let message): writeAll(socket, message.serialized())
///         case .startTimer(let timer, let delay): timers[timer] = .now + delay
///         case .cancelTimer(let timer): timers[timer] = nil
///         case .report, .log: break
///         }
///     }
/// }
/// perform(callee.register())
/// // Then, in the poll() loop: perform(callee.timerFired(t)) for each due timer, and
/// // framer.append(bytesRead) then perform(callee.receive(m)) for each .message(m).
/// ```
public struct SIPCallee: SIPUserAgent, Sendable {
    /// How the callee registers and answers.
    public struct Configuration: SIPUserAgentContact, Hashable, Sendable {
        /// The user part of the address of record.
        public var user: String
        /// The registrar's domain, `host` or `host:port`; the AOR is `sip:USER@DOMAIN`.
        public var domain: String
        /// The transport of Via and Contact (and of the driver's socket).
        public var transport: SIPTransport
        /// The host in Contact and Via; unresolvable by default (see the type's documentation).
        public var contactHost: String
        /// The port in Contact and Via: where the phone listens or its datagram socket is
        /// bound; nil for none (a TCP phone reached only over its own connection).
        public var contactPort: UInt16?
        /// The registration lifetime asked for, in seconds (more when ``wakePolicy`` needs it).
        public var expires: Int
        /// How often the process can be woken while it is suspended, for a phone under a
        /// supervisor such as voipd: registrations are then scheduled so that they never
        /// lapse between wakes (``SIPRegistrationSchedule``). Nil for a process that is never
        /// suspended, which refreshes on its own timer alone.
        public var wakePolicy: SIPRegistrationSchedule.WakePolicy?
        /// How long the phone rings before it answers.
        public var answerDelay: Duration
        /// The RTP port put in the SDP answer.
        public var rtpPort: UInt16
        /// The User-Agent header of REGISTER.
        public var userAgent: String

        /// A configuration; `contactHost` defaults to `USER.invalid`.
        public init(
            user: String, domain: String, transport: SIPTransport = .tcp, contactHost: String? = nil, contactPort: UInt16? = nil,
            expires: Int = 3600, wakePolicy: SIPRegistrationSchedule.WakePolicy? = nil, answerDelay: Duration = .seconds(1),
            rtpPort: UInt16 = 40_000, userAgent: String = "voipd-softphone"
        ) {
            self.user = user
            self.domain = domain
            self.transport = transport
            self.contactHost = contactHost ?? "\(user).invalid"
            self.contactPort = contactPort
            self.expires = expires
            self.wakePolicy = wakePolicy
            self.answerDelay = answerDelay
            self.rtpPort = rtpPort
            self.userAgent = userAgent
        }

        /// `sip:USER@DOMAIN`
        public var addressOfRecord: String { "sip:\(user)@\(domain)" }

        /// `sip:DOMAIN`, the Request-URI of REGISTER.
        public var registrarURI: SIPURI { (try? SIPURI(parsing: "sip:\(domain)")) ?? SIPURI(host: domain) }
    }

    /// The timers the callee asks its driver to arm.
    public enum Timer: Hashable, Sendable {
        /// Re-register before the binding expires.
        case registrationRefresh
        /// Register again after a failed attempt.
        case registrationRetry
        /// Answer the ringing call.
        case answer
    }

    /// What the callee tells the application.
    public enum Event: Hashable, Sendable {
        case registered(expires: Int)
        case unregistered
        case registrationFailed(statusCode: Int)
        case incomingCall(callID: String, from: String)
        case callEstablished(callID: String)
        case callEnded(callID: String, reason: String)
    }

    /// Where the registration stands.
    public enum RegistrationState: Hashable, Sendable {
        case unregistered
        case registering
        /// Registered for `expires` seconds from the last 200 OK.
        case registered(expires: Int)
        case unregistering
        case failed(statusCode: Int)
    }

    /// Where the (single) call stands; a second INVITE meanwhile gets 486 Busy Here.
    public enum CallState: Hashable, Sendable {
        case idle
        /// 180 sent; the answer timer is armed.
        case ringing(callID: String)
        /// 200 OK sent; waiting for the ACK.
        case answered(callID: String)
        case inCall(callID: String)
        /// BYE sent; waiting for its response.
        case hangingUp(callID: String)
    }

    /// What the callee asks its driver to do.
    public typealias Action = SIPAction<Timer, Event>

    /// How it registers and answers.
    public let configuration: Configuration
    /// Where the registration stands.
    public internal(set) var registrationState: RegistrationState = .unregistered
    /// Where the call stands.
    public internal(set) var callState: CallState = .idle
    /// How the current registration is refreshed (with a ``Configuration/wakePolicy``): the
    /// wake interval to ask the supervisor for, and whether the grant is covered.
    public internal(set) var registrationSchedule: SIPRegistrationSchedule?

    // REGISTER refreshes reuse Call-ID and From tag and increase CSeq (RFC 3261 10.2.4).
    let registrationCallID: String
    let registrationFromTag = SIPIdentifiers.tag()
    var registrationCSeq: UInt32 = 0
    var requestedExpires: Int
    /// The delay before the next attempt after a failed REGISTER.
    var retryDelay = SIPCallee.firstRetryDelay
    var call: IncomingCall?

    /// The INVITE being answered and the dialog it set up.
    struct IncomingCall: Hashable, Sendable {
        let invite: SIPMessage
        let localTag: String
        var dialog: SIPDialog
        /// The last response sent to the INVITE, resent if the INVITE is.
        var lastResponse: SIPMessage
    }

    /// An unregistered callee; call ``register()`` to start.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.registrationCallID = SIPIdentifiers.callID(host: configuration.contactHost)
        self.requestedExpires = configuration.wakePolicy.map {
            SIPRegistrationSchedule.requestedExpiry(configured: configuration.expires, policy: $0)
        } ?? configuration.expires
    }

    /// Handles a message read from the connection: responses to REGISTER and BYE, and
    /// INVITE, ACK, BYE, CANCEL and OPTIONS requests.
    public mutating func receive(_ message: SIPMessage) -> [Action] {
        guard let method = message.method else {
            switch message.cseq?.method {
            case .register?: return registrationResponse(message)
            case .bye?: return byeResponse(message)
            default: return [.log("ignored response \(message.summary)")]
            }
        }
        switch method {
        case .invite: return incomingInvite(message)
        case .ack: return incomingAck(message)
        case .bye: return incomingBye(message)
        case .cancel: return incomingCancel(message)
        case .options: return [.send(.response(to: message, statusCode: 200, toTag: SIPIdentifiers.tag()))]
        default: return [.send(.response(to: message, statusCode: 501, toTag: SIPIdentifiers.tag()))]
        }
    }

    /// Handles a timer it armed: refreshes the registration or answers the call.
    public mutating func timerFired(_ timer: Timer) -> [Action] {
        switch timer {
        case .registrationRefresh: refreshRegistration()
        case .registrationRetry: retryRegistration()
        case .answer: answer()
        }
    }

    /// Handles the loss of the connection: the binding and any call are gone; register
    /// again on a new connection.
    public mutating func connectionLost() -> [Action] {
        var actions: [Action] = [.cancelTimer(.registrationRefresh), .cancelTimer(.registrationRetry), .log("connection lost")]
        if registrationState != .unregistered {
            registrationState = .unregistered
            actions.append(.report(.unregistered))
        }
        if let call {
            actions += endCall(call, reason: "connection lost")
        }
        return actions
    }
}

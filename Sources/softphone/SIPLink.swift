import SIP

/// What the SIP link tells the softphone.
protocol SIPLinkDelegate: AnyObject {
    /// A new connection to the registrar is open and nothing was sent on it yet.
    func sipLink(_ link: SIPLink, didOpen connection: TCPConnection)
    /// The connection ended and is closed; the link reconnects on its next turn.
    func sipLink(_ link: SIPLink, didLose connection: TCPConnection, reason: String)
    /// A REGISTER went out and waits for its response.
    func sipLinkDidSendRegister(_ link: SIPLink)
    /// Something the callee state machine reported.
    func sipLink(_ link: SIPLink, didReport event: SIPCallee.Event)
}

/// The softphone's SIP side: one TCP connection to the registrar and the ``SIPCallee``
/// driven over it. The callee's Contact cannot be resolved and the softphone listens on no
/// port, so a call can reach it only over this connection, the one its REGISTER came on.
///
/// When the connection ends the link reconnects (at once, then less and less often) and
/// registers again over the new one.
final class SIPLink {
    enum Timer: Hashable {
        case callee(SIPCallee.Timer)
        case reconnect
    }

    let registrar: HostPort
    weak var delegate: SIPLinkDelegate?
    private(set) var callee: SIPCallee
    private(set) var connection: TCPConnection?
    private var framer = SIPStreamFramer()
    private var timers = TimerTable<Timer>()
    private var reconnectDelay = SIPLink.firstReconnectDelay

    static let connectTimeout: Duration = .seconds(3)
    static let firstReconnectDelay: Duration = .seconds(1)
    static let longestReconnectDelay: Duration = .seconds(60)

    init(registrar: HostPort, configuration: SIPCallee.Configuration) {
        self.registrar = registrar
        self.callee = SIPCallee(configuration: configuration)
    }

    var fileDescriptor: Int32? { connection?.fd }
    var nextDeadline: ContinuousClock.Instant? { timers.earliest }

    /// Opens the connection and registers over it; on failure, tries again later.
    func connectAndRegister() {
        timers.cancel(.reconnect)
        let opened: TCPConnection
        do {
            opened = try TCPConnection.connect(to: registrar, timeout: Self.connectTimeout)
        } catch {
            Log.write("sip", "cannot connect: \(error); again in \(reconnectDelay)")
            timers.arm(.reconnect, after: reconnectDelay)
            reconnectDelay = min(reconnectDelay * 2, Self.longestReconnectDelay)
            return
        }
        Log.write("sip", "connected to \(opened.remoteAddress) from \(opened.localAddress)")
        reconnectDelay = Self.firstReconnectDelay
        connection = opened
        framer = SIPStreamFramer()
        delegate?.sipLink(self, didOpen: opened)
        perform(callee.register())
    }

    /// Keeps using a connection voipd handed back after a relaunch. The registrar's binding
    /// lives as long as the connection, so nothing is sent now; the next keep-alive
    /// registers again, since this process cannot know when the binding expires.
    func adopt(_ fd: Int32) {
        let restored = TCPConnection(adopting: fd)
        Log.write("sip", "kept the connection voipd handed back (\(restored.localAddress) to \(restored.remoteAddress)); no REGISTER until the keep-alive")
        connection = restored
        framer = SIPStreamFramer()
    }

    /// Registers again over the connection (the keep-alive's work), or reconnects first.
    func refreshRegistration() {
        guard connection != nil else { return connectAndRegister() }
        perform(callee.register())
    }

    /// Ends the call: BYE once answered, 603 while ringing.
    func hangUp() {
        perform(callee.hangUp())
    }

    /// Reads what arrived and hands each message to the callee.
    func readAvailable() {
        guard let current = connection else { return }
        switch current.read() {
        case .nothing:
            return
        case .closed(let reason):
            return lose(reason)
        case .bytes(let bytes):
            framer.append(bytes)
        }
        do {
            while connection === current, let item = try framer.next() {
                switch item {
                case .message(let message):
                    Log.write("sip", "received \(message.summary)")
                    perform(callee.receive(message))
                case .keepAlivePing:
                    // RFC 5626 3.5.1: a CRLF pong answers a double-CRLF ping.
                    sendBytes(Array("\r\n".utf8), describing: "keep-alive pong")
                case .keepAlivePong:
                    break
                }
            }
        } catch {
            lose("unreadable SIP: \(error)")
        }
    }

    func fireDueTimers(at now: ContinuousClock.Instant) {
        for timer in timers.takeDue(at: now) {
            switch timer {
            case .callee(let calleeTimer): perform(callee.timerFired(calleeTimer))
            case .reconnect: connectAndRegister()
            }
        }
    }

    private func perform(_ actions: [SIPCallee.Action]) {
        // Reports last: what the softphone does about one (ending a background task, which
        // may suspend it at once) comes after every message and log line of the step.
        let reports = actions.compactMap { action -> SIPCallee.Event? in
            if case .report(let event) = action { event } else { nil }
        }
        for action in actions {
            switch action {
            case .send(let message):
                sendBytes(message.serialized(), describing: message.summary)
                if message.method == .register, connection != nil { delegate?.sipLinkDidSendRegister(self) }
            case .startTimer(let timer, let delay): timers.arm(.callee(timer), after: delay)
            case .cancelTimer(let timer): timers.cancel(.callee(timer))
            case .report: break
            case .log(let text): Log.write("sip", text)
            }
        }
        for event in reports { delegate?.sipLink(self, didReport: event) }
    }

    private func sendBytes(_ bytes: [UInt8], describing what: String) {
        guard let connection else { return Log.write("sip", "not sent, no connection: \(what)") }
        let time = Log.timestamp()
        do {
            try connection.send(bytes)
            Log.write("sip", "sent \(what)", at: time)
        } catch {
            lose("\(error)")
        }
    }

    private func lose(_ reason: String) {
        guard let lost = connection else { return }
        connection = nil
        Log.write("sip", "connection lost (\(reason)); reconnecting")
        delegate?.sipLink(self, didLose: lost, reason: reason)
        perform(callee.connectionLost())
        // From the loop, not from here: this may run in the middle of performing actions.
        timers.arm(.reconnect, after: .zero)
    }
}

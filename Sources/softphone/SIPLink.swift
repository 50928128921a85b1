import SIP

/// What the SIP link tells the softphone.
protocol SIPLinkDelegate: AnyObject {
    /// A new SIP socket, nothing sent on it yet: hand it to voipd as a VoIP socket.
    func sipLink(_ link: SIPLink, didOpen role: SIPSocketRole, fd: Int32, detail: String)
    /// A connection ended and is closed; the registrar's is opened again on the next turn.
    func sipLink(_ link: SIPLink, didClose role: SIPSocketRole, reason: String)
    /// A REGISTER went out and waits for its response.
    func sipLinkDidSendRegister(_ link: SIPLink)
    /// Something the callee state machine reported.
    func sipLink(_ link: SIPLink, didReport event: SIPCallee.Event)
}

/// How the SIP link reaches the registrar and how it can be reached.
struct SIPLinkSettings {
    var registrar: HostPort
    var transport: SIPTransport
    /// Where to listen (TCP) or bind (UDP) with a Contact pointing there; nil for none.
    var listen: SIPSocketAddress?
    /// The callee's configuration but for the contact, which the sockets decide.
    var callee: SIPCallee.Configuration
    var timers = SIPTimerValues.standard
}

/// The softphone's SIP side: its sockets (``SIPSockets``) and the ``SIPCallee`` driven over
/// them through the transaction layer (``SIPUserAgentStack``).
///
/// Without `--listen` the softphone is reachable only through the registrar: over TCP its
/// Contact cannot be resolved and a call can come only over the connection its REGISTER
/// took; over UDP its socket is connected to the registrar, which reaches it at the
/// REGISTER's source address. With `--listen` the Contact is that address: a TCP listener
/// there (the registrar may open a new connection to it) or the UDP socket bound there.
///
/// When the registrar connection ends the link reconnects (at once, then less and less
/// often) and registers again over the new one.
final class SIPLink {
    enum Timer: Hashable {
        case callee(SIPCallee.Timer)
        case reconnect
    }

    let settings: SIPLinkSettings
    weak var delegate: SIPLinkDelegate?
    /// The callee and its transactions (once ``start(restoring:)`` has opened the sockets),
    /// and the timers.
    private var driver: SIPAgentDriver<SIPCallee, Timer>
    private var reconnectDelay = SIPLink.firstReconnectDelay
    private var registrarAddress: SIPSocketAddress?

    static let connectTimeout: Duration = .seconds(3)
    static let firstReconnectDelay: Duration = .seconds(1)
    static let longestReconnectDelay: Duration = .seconds(60)
    // The outbound flow before the first connection: no stream has number 0.
    private static let noConnection = SIPFlow.connection(0)

    init(settings: SIPLinkSettings) {
        self.settings = settings
        driver = SIPAgentDriver(sockets: SIPSockets(transport: settings.transport), logCategory: "sip", timerKey: Timer.callee)
    }

    private var sockets: SIPSockets { driver.sockets }
    var callee: SIPCallee? { driver.agent }
    var descriptors: [Int32] { sockets.descriptors }
    var nextDeadline: ContinuousClock.Instant? { driver.nextDeadline }

    /// Opens the sockets (or takes the ones voipd handed back, by role), and registers
    /// unless the registrar's flow was handed back: that binding lives on, and the next
    /// keep-alive registers again, since this process cannot know when it expires.
    func start(restoring restored: [(SIPSocketRole, Int32)]) throws {
        var adoptedRegistrarFlow = false
        for (role, fd) in restored {
            let (_, detail) = try sockets.adopt(fd, as: role)
            let what = role == .registrarConnection ? "the connection" : "\(role)"
            Log.write("sip", "kept \(what) voipd handed back (\(detail))")
            if role == .registrarConnection || role == .datagrams { adoptedRegistrarFlow = true }
        }
        var configuration = settings.callee
        configuration.transport = settings.transport
        let outbound: SIPFlow
        switch settings.transport {
        case .udp:
            let registrar = try SIPSocketAddress.resolve(host: settings.registrar.host, port: settings.registrar.port)
            registrarAddress = registrar
            if sockets.datagrams == nil {
                // Without --listen: reachable only through the registrar, like the TCP phone.
                let local = try settings.listen ?? SIPDatagramSocket.localAddress(toward: registrar).with(port: 0)
                handle(try sockets.openDatagrams(binding: local, connectingTo: settings.listen == nil ? registrar : nil))
            }
            guard let bound = sockets.datagrams?.localAddress else { throw NetworkError("udp", reason: "no socket") }
            configuration.contactHost = bound.uriHost
            configuration.contactPort = bound.port
            outbound = .datagram(registrar)
        case .tcp:
            if let listen = settings.listen, sockets.listener == nil { handle(try sockets.openListener(at: listen)) }
            if let listener = sockets.listener {
                configuration.contactHost = listener.localAddress.uriHost
                configuration.contactPort = listener.localAddress.port
            }
            outbound = sockets.outboundFlow ?? Self.noConnection
        }
        driver.stack = SIPUserAgentStack(SIPCallee(configuration: configuration), transport: settings.transport, outbound: outbound, timers: settings.timers)
        Log.write("sip", "contact \(configuration.contact) over \(settings.transport)")
        if adoptedRegistrarFlow {
            Log.write("sip", "no REGISTER until the keep-alive: the registrar's binding outlives this process")
        } else {
            refreshRegistration()
        }
    }

    /// Registers again (the keep-alive's work), over a new connection to the registrar if
    /// TCP has none.
    func refreshRegistration() {
        if settings.transport == .tcp, sockets.outbound == nil { return connectAndRegister() }
        apply { $0.register() }
    }

    /// Ends the call: BYE once answered, 603 while ringing.
    func hangUp() {
        apply { $0.hangUp() }
    }

    /// Reads what arrived on the SIP socket `fd` and handles it.
    func readAvailable(_ fd: Int32) {
        handle(sockets.readAvailable(fd))
    }

    /// Reads everything waiting on every SIP socket and handles it: a wake is acknowledged
    /// only after this.
    func readEverything() {
        handle(sockets.readEverything())
    }

    func fireDueTimers(at now: ContinuousClock.Instant) {
        for timer in driver.timers.takeDue(at: now) {
            switch timer {
            case .callee(let calleeTimer): perform { $0.timerFired(calleeTimer, at: now) }
            case .reconnect: connectAndRegister()
            }
        }
        perform { $0.expire(at: now) }
    }

    private func connectAndRegister() {
        driver.timers.cancel(.reconnect)
        do {
            let (flow, events) = try sockets.connectOutbound(to: settings.registrar, timeout: Self.connectTimeout)
            reconnectDelay = Self.firstReconnectDelay
            driver.stack?.outbound = flow
            handle(events)
        } catch {
            Log.write("sip", "cannot connect: \(error); again in \(reconnectDelay)")
            driver.timers.arm(.reconnect, after: reconnectDelay)
            reconnectDelay = min(reconnectDelay * 2, Self.longestReconnectDelay)
            return
        }
        apply { $0.register() }
    }

    private func apply(_ input: (inout SIPCallee) -> [SIPCallee.Action]) {
        perform { $0.apply(input) }
    }

    private func handle(_ events: [SIPSockets.Event]) {
        for event in events {
            switch event {
            case .message(let message, let flow):
                Log.write("sip", "received \(message.summary) on \(flow)")
                perform { $0.receive(message, from: flow) }
            case .opened(let role, let fd, let detail):
                delegate?.sipLink(self, didOpen: role, fd: fd, detail: detail)
            case .closed(let role, let flow, let reason):
                Log.write("sip", role == .registrarConnection ? "connection lost (\(reason)); reconnecting" : "\(role) closed (\(reason))")
                delegate?.sipLink(self, didClose: role, reason: reason)
                perform { $0.flowClosed(flow) }
                // From the loop, not from here: this may run in the middle of performing actions.
                if role == .registrarConnection { driver.timers.arm(.reconnect, after: .zero) }
            case .log(let text):
                Log.write("sip", text)
            }
        }
    }

    /// Runs one step of the stack and does what it says. Reports go last: what the
    /// softphone does about one (ending a background task, which may suspend it at once)
    /// comes after every message and log line of the step.
    private func perform(_ step: (inout SIPUserAgentStack<SIPCallee, SIPFlow>) -> [SIPUserAgentStack<SIPCallee, SIPFlow>.Output]) {
        let done = driver.perform(step)
        if done.sent.contains(where: { $0.method == .register }) { delegate?.sipLinkDidSendRegister(self) }
        handle(done.socketEvents)
        for event in done.reports { delegate?.sipLink(self, didReport: event) }
    }
}

import SIP

/// An error in the command line, with what to say.
struct UsageError: Error, CustomStringConvertible {
    var description: String
}

/// The command line, read option by option.
struct ArgumentReader {
    private var remaining: [String]

    init(_ arguments: [String]) { remaining = arguments }

    /// The next argument, if any.
    mutating func next() -> String? { remaining.isEmpty ? nil : remaining.removeFirst() }

    /// The value after `flag`.
    mutating func value(of flag: String) throws(UsageError) -> String {
        guard let value = next() else { throw UsageError(description: "\(flag) needs a value") }
        return value
    }

    mutating func address(of flag: String) throws(UsageError) -> HostPort {
        let text = try value(of: flag)
        guard let address = HostPort(parsing: text) else { throw UsageError(description: "\(flag) needs HOST:PORT, not \(text)") }
        return address
    }

    /// A numeric `ADDRESS:PORT` to bind (port 0 for any), not a wildcard address: a Contact
    /// points there.
    mutating func socketAddress(of flag: String) throws(UsageError) -> SIPSocketAddress {
        let text = try value(of: flag)
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]),
            let address = SIPSocketAddress(numericHost: String(text[..<colon]), port: port)
        else { throw UsageError(description: "\(flag) needs a numeric ADDRESS:PORT such as 127.0.0.1:5062 or [::1]:0, not \(text)") }
        guard address != address.unspecified.with(port: port) else {
            throw UsageError(description: "\(flag) needs the address the registrar reaches the phone at, not \(address.host)")
        }
        return address
    }

    mutating func transport(of flag: String) throws(UsageError) -> SIPTransport {
        let text = try value(of: flag)
        guard let transport = SIPTransport(name: text) else { throw UsageError(description: "\(flag) needs udp or tcp, not \(text)") }
        return transport
    }

    mutating func wholeSeconds(of flag: String) throws(UsageError) -> Int {
        let text = try value(of: flag)
        guard let value = Int(text), value > 0 else { throw UsageError(description: "\(flag) needs a positive number of seconds, not \(text)") }
        return value
    }

    mutating func seconds(of flag: String) throws(UsageError) -> Duration {
        let text = try value(of: flag)
        guard let seconds = Double(text), seconds >= 0, seconds.isFinite else {
            throw UsageError(description: "\(flag) needs a number of seconds, not \(text)")
        }
        return .seconds(seconds)
    }
}

/// How the softphone runs.
struct SoftphoneOptions {
    var registrar: HostPort
    var user: String
    var answerAfter: Duration = .seconds(1)
    var hangUpAfter: Duration?
    var presence: HostPort?
    var presenceInterval: Duration = .seconds(10)
    var expires = 3600
    /// The keep-alive interval it asks voipd for, in seconds (lowered when the registrar
    /// grants less).
    var keepAlive = 600
    var transport = SIPTransport.tcp
    var listen: SIPSocketAddress?
    /// Run without voipd: never suspended, nothing to register sockets with.
    var unsupervised = false

    init(parsing arguments: [String]) throws(UsageError) {
        var reader = ArgumentReader(arguments)
        var registrar: HostPort?
        var user: String?
        while let argument = reader.next() {
            switch argument {
            case "--registrar": registrar = try reader.address(of: argument)
            case "--user": user = try reader.value(of: argument)
            case "--answer-after": answerAfter = try reader.seconds(of: argument)
            case "--hang-up-after": hangUpAfter = try reader.seconds(of: argument)
            case "--presence": presence = try reader.address(of: argument)
            case "--presence-interval": presenceInterval = try reader.seconds(of: argument)
            case "--expires": expires = try reader.wholeSeconds(of: argument)
            case "--keep-alive": keepAlive = try reader.wholeSeconds(of: argument)
            case "--transport": transport = try reader.transport(of: argument)
            case "--listen": listen = try reader.socketAddress(of: argument)
            case "--unsupervised": unsupervised = true
            default: throw UsageError(description: "unknown argument \(argument)")
            }
        }
        guard let registrar else { throw UsageError(description: "--registrar HOST:PORT is required") }
        guard let user, !user.isEmpty else { throw UsageError(description: "--user NAME is required") }
        self.registrar = registrar
        self.user = user
    }

    /// Whether this run has a socket in `role`: the ones of its transport, and a listener
    /// (and the connections accepted on it) only with `--listen` over TCP.
    func uses(_ role: SIPSocketRole) -> Bool {
        switch role {
        case .datagrams: transport == .udp
        case .registrarConnection: transport == .tcp
        case .listener, .accepted: transport == .tcp && listen != nil
        }
    }

    /// How voipd may wake the phone, in real seconds, as the registration schedule compares
    /// it with the registrar's grant: `--keep-alive` and the shortest keep-alive voipd permits
    /// this app, both in the app's seconds, in real ones.
    func wakePolicy(keepAliveMinimum: Int, _ time: VoipdTime) -> SIPRegistrationSchedule.WakePolicy {
        SIPRegistrationSchedule.WakePolicy(preferred: time.realSeconds(keepAlive, roundingUp: false),
                                           shortest: time.realSeconds(keepAliveMinimum, roundingUp: true))
    }

    /// The SIP link's settings: the registrar is the domain; the Contact is decided once the
    /// sockets are open. Under voipd (with a `wakePolicy`), registrations are scheduled
    /// around the keep-alive.
    func linkSettings(wakePolicy: SIPRegistrationSchedule.WakePolicy?) -> SIPLinkSettings {
        SIPLinkSettings(
            registrar: registrar, transport: transport, listen: listen,
            callee: SIPCallee.Configuration(
                user: user, domain: registrar.description, transport: transport, expires: expires, wakePolicy: wakePolicy,
                answerDelay: answerAfter))
    }
}

/// How `softphone call` runs.
struct CallOptions {
    var target: SIPURI
    var registrar: HostPort
    var hold: Duration = .seconds(1)
    var from = "caller"
    var cancelAfter: Duration?
    var timeout: Duration = .seconds(30)
    var transport = SIPTransport.tcp

    init(parsing arguments: [String]) throws(UsageError) {
        var reader = ArgumentReader(arguments)
        var target: SIPURI?
        var registrar: HostPort?
        while let argument = reader.next() {
            switch argument {
            case "--registrar": registrar = try reader.address(of: argument)
            case "--hold": hold = try reader.seconds(of: argument)
            case "--from": from = try reader.value(of: argument)
            case "--cancel-after": cancelAfter = try reader.seconds(of: argument)
            case "--timeout": timeout = try reader.seconds(of: argument)
            case "--transport": transport = try reader.transport(of: argument)
            default:
                guard target == nil, !argument.hasPrefix("-"), let uri = try? SIPURI(parsing: argument), uri.user != nil else {
                    throw UsageError(description: "unexpected argument \(argument) (the target is sip:USER@HOST:PORT)")
                }
                target = uri
            }
        }
        guard let target else { throw UsageError(description: "call needs a target, sip:USER@HOST:PORT") }
        self.target = target
        let host = target.host.hasPrefix("[") ? String(target.host.dropFirst().dropLast()) : target.host
        self.registrar = registrar ?? HostPort(host: host, port: target.port ?? 5060)
    }
}

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
    var keepAlive: Duration = .seconds(600)

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
            case "--expires":
                let text = try reader.value(of: argument)
                guard let value = Int(text), value > 0 else { throw UsageError(description: "--expires needs a positive number, not \(text)") }
                expires = value
            case "--keep-alive": keepAlive = try reader.seconds(of: argument)
            default: throw UsageError(description: "unknown argument \(argument)")
            }
        }
        guard let registrar else { throw UsageError(description: "--registrar HOST:PORT is required") }
        guard let user, !user.isEmpty else { throw UsageError(description: "--user NAME is required") }
        self.registrar = registrar
        self.user = user
    }

    /// The callee's configuration: the registrar is the domain, the Contact unresolvable.
    var calleeConfiguration: SIPCallee.Configuration {
        SIPCallee.Configuration(user: user, domain: registrar.description, expires: expires, answerDelay: answerAfter)
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

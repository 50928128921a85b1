import VoipdVocabulary

/// A rule that cannot be read, with what is wrong and how to write it.
public struct AdoptionRuleError: Error, Equatable, Sendable, CustomStringConvertible {
    public var rule: String
    public var problem: String

    public var description: String { "adoption rule '\(rule)': \(problem)" }
}

extension AdoptionRule: CustomStringConvertible {
    /// Reads a rule:
    ///
    ///     rule      = "sip" [":" "port=" PORT *("," "port=" PORT)]
    ///               / transport [":" field *("," field)]
    ///     transport = "tcp" / "udp" / "tls"          ; tls is tcp: the kernel sees TCP
    ///     field     = "role=" ("listening" / "connected" / "unconnected")
    ///               / "local=" endpoint / "remote=" endpoint
    ///     endpoint  = host ":" ports
    ///     host      = "*" / IPV4 ["/" BITS] / "[" IPV6 ["/" BITS] "]"
    ///     ports     = "*" / PORT / PORT "-" PORT        ; PORT: 1 to 65535
    ///
    /// Examples: `sip`, `sip:port=5080`, `tcp:remote=*:5060`, `udp:local=*:5062`,
    /// `tcp:role=listening,local=10.0.0.1:*`, `tcp:remote=[2001:db8::/32]:5061`.
    /// Host names are refused: voipd resolves nothing.
    public init(parsing text: String) throws {
        let fail = { (problem: String) in AdoptionRuleError(rule: text, problem: problem) }
        let kind: Substring
        let fieldText: Substring?
        if let colon = text.firstIndex(of: ":") {
            kind = text[..<colon]
            fieldText = text[text.index(after: colon)...]
        } else {
            kind = Substring(text)
            fieldText = nil
        }
        var fields: [(name: Substring, value: Substring)] = []
        if let fieldText {
            for field in fieldText.split(separator: ",", omittingEmptySubsequences: false) {
                guard let equals = field.firstIndex(of: "="), equals != field.startIndex else {
                    throw fail("'\(field)' is not NAME=VALUE")
                }
                fields.append((field[..<equals], field[field.index(after: equals)...]))
            }
        }
        switch kind {
        case "sip":
            var ports: [UInt16] = []
            for (name, value) in fields {
                guard name == "port" else { throw fail("the sip preset takes port=N only, not '\(name)'") }
                guard let port = Self.port(value) else { throw fail("'\(value)' is not a port (1 to 65535)") }
                if port != 5060, !ports.contains(port) { ports.append(port) }
            }
            self = .sip(SIPPreset(extraPorts: ports))
        case "tcp", "tls", "udp":
            var pattern = SocketPattern(transport: kind == "udp" ? .udp : .tcp)
            var seen: Set<Substring> = []
            for (name, value) in fields {
                guard seen.insert(name).inserted else { throw fail("'\(name)' is given twice") }
                switch name {
                case "role":
                    guard let role = NetworkSocket.Role(rawValue: String(value)) else {
                        throw fail("role '\(value)' is none of listening, connected, unconnected")
                    }
                    pattern.role = role
                case "local", "remote":
                    let endpoint = try Self.endpoint(value, fail)
                    if name == "local" { pattern.local = endpoint } else { pattern.remote = endpoint }
                default:
                    throw fail("'\(name)' is none of role, local, remote")
                }
            }
            if pattern.transport == .udp, pattern.role == .listening { throw fail("UDP sockets do not listen; use role=unconnected") }
            if pattern.remote != nil, let role = pattern.role, role != .connected {
                throw fail("a \(role.rawValue) socket has no remote end")
            }
            self = .pattern(pattern)
        case "":
            throw fail("empty: write sip, tcp, udp or tls, then :FIELD=VALUE,…")
        default:
            throw fail("'\(kind)' is none of sip, tcp, udp, tls")
        }
    }

    /// The rule's text in the form ``init(parsing:)`` reads (`tls` is written `tcp`).
    public var description: String {
        switch self {
        case .sip(let preset): return preset.extraPorts.isEmpty ? "sip" : "sip:" + preset.extraPorts.map { "port=\($0)" }.joined(separator: ",")
        case .pattern(let pattern): return SocketPattern.text(pattern)
        }
    }

    private static func port(_ text: Substring) -> UInt16? {
        guard !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = UInt16(text), port > 0 else { return nil }
        return port
    }

    private static func endpoint(_ text: Substring, _ fail: (String) -> AdoptionRuleError) throws -> EndpointPattern {
        guard let colon = text.lastIndex(of: ":") else { throw fail("'\(text)' is not HOST:PORT (use * for any)") }
        let host = text[..<colon], portText = text[text.index(after: colon)...]
        var endpoint = EndpointPattern()
        if portText != "*" {
            let bounds = portText.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), let low = port(bounds[0]), let high = port(bounds[bounds.count - 1]), low <= high else {
                throw fail("'\(portText)' is not a port, a range LOW-HIGH of ports (1 to 65535) or *")
            }
            endpoint.port = .range(low...high)
        }
        if host != "*" {
            var address = host
            let bracketed = host.first == "["
            if bracketed {
                guard host.last == "]" else { throw fail("'\(host)' opens a bracket it does not close") }
                address = host.dropFirst().dropLast()
            }
            var length: Int?
            if let slash = address.firstIndex(of: "/") {
                guard let bits = Int(address[address.index(after: slash)...]) else { throw fail("'\(address)' has no prefix length after /") }
                length = bits
                address = address[..<slash]
            }
            guard let ip = IPAddress(address) else {
                throw fail("'\(address)' is not an address: write an IPv4 address, an IPv6 address in brackets, or * (voipd resolves no names)")
            }
            guard (ip.family == .ipv6) == bracketed else {
                throw fail(bracketed ? "only IPv6 addresses go in brackets" : "an IPv6 address goes in brackets: [\(address)]:PORT")
            }
            // 0.0.0.0 binds to every address, but a rule naming it would read as "sockets bound
            // to the unspecified address only": say what to write instead.
            guard !ip.isUnspecified || length != nil else { throw fail("'\(host)' is ambiguous in a rule: write * for any address") }
            let maximum = ip.family == .ipv4 ? 32 : 128
            if let length, !(0...maximum).contains(length) { throw fail("a prefix of \(length) bits does not fit \(ip)") }
            endpoint.address = .network(ip, prefixLength: length ?? maximum)
        }
        return endpoint
    }
}

extension SocketPattern {
    static func text(_ pattern: SocketPattern) -> String {
        var fields: [String] = []
        if let role = pattern.role { fields.append("role=\(role.rawValue)") }
        if let local = pattern.local { fields.append("local=\(text(local))") }
        if let remote = pattern.remote { fields.append("remote=\(text(remote))") }
        return pattern.transport.rawValue + (fields.isEmpty ? "" : ":" + fields.joined(separator: ","))
    }

    static func text(_ endpoint: EndpointPattern) -> String {
        let host: String
        switch endpoint.address {
        case .any: host = "*"
        case .network(let address, let length):
            let full = address.family == .ipv4 ? 32 : 128
            let network = length == full ? "\(address)" : "\(address)/\(length)"
            host = address.family == .ipv6 ? "[\(network)]" : network
        }
        let port: String
        switch endpoint.port {
        case .any: port = "*"
        case .range(let range): port = range.count == 1 ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
        }
        return host + ":" + port
    }
}

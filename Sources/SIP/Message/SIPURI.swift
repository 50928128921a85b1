/// A `sip:` or `sips:` URI: `sip:user:password@host:port;params?headers`.
///
/// Parsing keeps parameter values and the headers part as written, so `description`
/// reproduces a URI such as `sip:alice@alice.invalid;transport=tcp;alias=127.0.0.1~5060~2`
/// exactly, which in-dialog routing through a proxy depends on.
public struct SIPURI: Hashable, Sendable, CustomStringConvertible {
    /// `sip` or `sips`, lowercased.
    public var scheme: String
    /// The user part, if any (`alice` in `sip:alice@example.com`).
    public var user: String?
    /// The password after `user:`, if any.
    public var password: String?
    /// A host name, IPv4 address or bracketed IPv6 reference (`[::1]`).
    public var host: String
    /// The port, if written.
    public var port: UInt16?
    /// URI parameters (`transport`, `lr`, …), as written.
    public var parameters: SIPParameters
    /// The `?name=value&…` part without the `?`, as written.
    public var headers: String?

    public init(
        scheme: String = "sip", user: String? = nil, password: String? = nil, host: String,
        port: UInt16? = nil, parameters: SIPParameters = SIPParameters(), headers: String? = nil
    ) {
        self.scheme = scheme
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.parameters = parameters
        self.headers = headers
    }

    /// Reads a URI such as `sip:alice@127.0.0.1:5060;transport=tcp`.
    public init(parsing text: some StringProtocol) throws(SIPParseError) {
        let text = String(text)
        let invalid = SIPParseError.invalidURI(text)
        guard let colon = text.firstIndex(of: ":") else { throw invalid }
        let scheme = text[..<colon].lowercased()
        guard scheme == "sip" || scheme == "sips" else { throw invalid }
        var rest = text[text.index(after: colon)...]
        guard !rest.isEmpty, !rest.contains(where: { $0 == " " || $0 == "\t" || $0.isNewline }) else { throw invalid }

        var headers: String?
        if let question = rest.firstIndex(of: "?") {
            headers = String(rest[rest.index(after: question)...])
            rest = rest[..<question]
        }
        var user: String?
        var password: String?
        // `@` may appear only between the user part and the host (RFC 3261 25.1).
        if let at = rest.firstIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let userParts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard !userParts[0].isEmpty else { throw invalid }
            user = String(userParts[0])
            password = userParts.count > 1 ? String(userParts[1]) : nil
        }
        let hostPort: Substring
        var parameters = SIPParameters()
        if let semicolon = rest.firstIndex(of: ";") {
            hostPort = rest[..<semicolon]
            do {
                parameters = try SIPParameters(parsing: rest[semicolon...])
            } catch {
                throw invalid
            }
        } else {
            hostPort = rest
        }
        guard let (host, port) = Self.splitHostPort(hostPort) else { throw invalid }
        self.init(
            scheme: scheme, user: user, password: password, host: host, port: port,
            parameters: parameters, headers: headers)
    }

    /// Splits `host[:port]`, validating both; nil when either is malformed.
    static func splitHostPort(_ text: Substring) -> (String, UInt16?)? {
        var host = text
        var portText: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[...close]
            let after = text[text.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
            let inner = host.dropFirst().dropLast()
            guard !inner.isEmpty, inner.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
        } else {
            if let colon = text.firstIndex(of: ":") {
                host = text[..<colon]
                portText = text[text.index(after: colon)...]
            }
            guard !host.isEmpty,
                host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_") })
            else { return nil }
        }
        guard let portText else { return (String(host), nil) }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
            let port = UInt16(portText)
        else { return nil }
        return (String(host), port)
    }

    /// `host` or `host:port`.
    public var hostPort: String { port.map { "\(host):\($0)" } ?? host }

    public var description: String {
        var text = scheme + ":"
        if let user {
            text += user
            if let password { text += ":" + password }
            text += "@"
        }
        text += hostPort + parameters.description
        if let headers { text += "?" + headers }
        return text
    }
}

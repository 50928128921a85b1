/// One Via header value: `SIP/2.0/TCP host:port;branch=z9hG4bK…;rport`.
public struct SIPVia: Hashable, Sendable, CustomStringConvertible {
    /// The transport, uppercased (`TCP`, `UDP`, `TLS`).
    public var transport: String
    /// The sent-by host.
    public var host: String
    /// The sent-by port, if written.
    public var port: UInt16?
    /// `branch`, `rport`, `received`, …
    public var parameters: SIPParameters

    public init(transport: String = "TCP", host: String, port: UInt16? = nil, parameters: SIPParameters = SIPParameters()) {
        self.transport = transport
        self.host = host
        self.port = port
        self.parameters = parameters
    }

    /// Reads a Via value; blanks around the `/` of the protocol are allowed (RFC 3261 20.42).
    public init(parsing text: some StringProtocol) throws(SIPParseError) {
        let invalid = SIPParseError.invalidHeaderValue(name: "Via", value: String(text))
        let collapsed = SIPSyntax.trimmed(Substring(text))
            .split(separator: "/", omittingEmptySubsequences: false)
            .map { SIPSyntax.trimmed($0) }
            .joined(separator: "/")
        guard let blank = collapsed.firstIndex(where: { $0 == " " || $0 == "\t" }) else { throw invalid }
        let protocolParts = collapsed[..<blank].split(separator: "/", omittingEmptySubsequences: false)
        guard protocolParts.count == 3, protocolParts[0].uppercased() == "SIP", protocolParts[1] == "2.0",
            SIPSyntax.isToken(protocolParts[2])
        else { throw invalid }
        let rest = SIPSyntax.trimmed(collapsed[blank...])
        let semicolon = rest.firstIndex(of: ";") ?? rest.endIndex
        guard let (host, port) = SIPURI.splitHostPort(SIPSyntax.trimmed(rest[..<semicolon])) else { throw invalid }
        self.init(
            transport: protocolParts[2].uppercased(), host: host, port: port,
            parameters: try SIPParameters(parsing: rest[semicolon...]))
    }

    /// The transaction identifier (RFC 3261 8.1.1.7).
    public var branch: String? { parameters["branch"] }

    public var description: String {
        "SIP/2.0/\(transport) " + (port.map { "\(host):\($0)" } ?? host) + parameters.description
    }
}

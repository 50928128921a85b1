/// A user agent's own address as its Contact and Via give it: what the configurations of
/// ``SIPCallee`` and ``SIPCaller`` share.
public protocol SIPUserAgentContact {
    /// The user part of Contact (and of the address of record).
    var user: String { get }
    /// The transport of Via and Contact.
    var transport: SIPTransport { get }
    /// The host in Contact and Via.
    var contactHost: String { get }
    /// The port in Contact and Via, if any.
    var contactPort: UInt16? { get }
}

extension SIPUserAgentContact {
    /// `<sip:USER@CONTACTHOST[:CONTACTPORT];transport=tcp>` (or `udp`)
    public var contact: String { "<sip:\(user)@\(sentBy);transport=\(transport.parameterValue)>" }

    /// A new top Via for a request, with a new branch:
    /// `SIP/2.0/TCP CONTACTHOST[:CONTACTPORT];branch=…;rport`. `rport` asks the next hop to
    /// note the source port (RFC 3581) and to answer there, since the host may not be
    /// resolvable and a TCP connection's source port is not the one in sent-by.
    public func newVia() -> String { "SIP/2.0/\(transport) \(sentBy);branch=\(SIPIdentifiers.branch());rport" }

    private var sentBy: String { contactPort.map { "\(contactHost):\($0)" } ?? contactHost }
}

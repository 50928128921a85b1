/// How SIP messages travel between two hops (RFC 3261 18).
public enum SIPTransport: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Datagrams: one message per datagram, lost or duplicated at times, so requests and
    /// final responses are retransmitted by the transaction layer.
    case udp = "UDP"
    /// A byte stream framed by Content-Length; delivery is reliable, so nothing is
    /// retransmitted, but transactions still time out.
    case tcp = "TCP"

    /// Reads `udp` or `tcp` in any case (the `transport` URI parameter, a command line).
    public init?(name: some StringProtocol) {
        self.init(rawValue: name.uppercased())
    }

    /// Whether the transport itself delivers every message (RFC 3261 17.1.1.2: no
    /// retransmission over a reliable transport).
    public var isReliable: Bool { self != .udp }

    /// The value of the `transport` URI parameter: `udp` or `tcp`.
    public var parameterValue: String { rawValue.lowercased() }

    public var description: String { rawValue }
}

/// Something the registrar saw or did, reported to its observer for a timeline.
public struct SIPTrafficEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable {
        case connectionOpened
        case connectionClosed(reason: String)
        case received(SIPMessage)
        case sent(SIPMessage)
        /// A message dropped or refused, a framing error, …
        case note(String)
    }

    /// When it happened, on the monotonic clock.
    public let time: ContinuousClock.Instant
    /// The registrar's number for the connection (or, over UDP, the peer's address), unique
    /// for the registrar's lifetime.
    public let connection: Int
    /// The peer's `ip:port`.
    public let peer: String
    /// The transport: TCP for a connection, UDP for a peer's datagrams.
    public let transport: SIPTransport
    /// What happened.
    public let kind: Kind
}

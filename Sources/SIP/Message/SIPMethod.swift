/// A SIP request method such as `INVITE`. Methods are case-sensitive (RFC 3261 7.1).
public struct SIPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    public var description: String { rawValue }

    public static let register: SIPMethod = "REGISTER"
    public static let invite: SIPMethod = "INVITE"
    public static let ack: SIPMethod = "ACK"
    public static let bye: SIPMethod = "BYE"
    public static let cancel: SIPMethod = "CANCEL"
    public static let options: SIPMethod = "OPTIONS"
}

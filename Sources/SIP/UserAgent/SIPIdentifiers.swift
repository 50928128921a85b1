/// Random identifiers for tags, branches and Call-IDs (RFC 3261 19.3, 8.1.1.7).
public enum SIPIdentifiers {
    /// The prefix RFC 3261 branches start with.
    public static let branchMagicCookie = "z9hG4bK"

    /// A new Via branch.
    public static func branch() -> String { branchMagicCookie + randomHex(bytes: 8) }

    /// A new From/To tag.
    public static func tag() -> String { randomHex(bytes: 6) }

    /// A new Call-ID, `random@host`.
    public static func callID(host: String) -> String { randomHex(bytes: 12) + "@" + host }

    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<bytes).map { _ in
            let byte = UInt8.random(in: 0...255, using: &generator)
            return String(byte >> 4, radix: 16) + String(byte & 0x0F, radix: 16)
        }.joined()
    }
}

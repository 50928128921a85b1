/// The CSeq header: a sequence number and the method of the request it belongs to.
public struct SIPCSeq: Hashable, Sendable, CustomStringConvertible {
    /// The sequence number, below 2^31.
    public var number: UInt32
    /// The method of the request (also in its responses).
    public var method: SIPMethod

    public init(number: UInt32, method: SIPMethod) {
        self.number = number
        self.method = method
    }

    /// Reads `314159 INVITE`; the number must be below 2^31 (RFC 3261 8.1.1.5).
    public init(parsing text: some StringProtocol) throws(SIPParseError) {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 2, parts[0].count <= 10, parts[0].allSatisfy({ $0.isASCII && $0.isNumber }),
            let number = UInt32(parts[0]), number < 1 << 31, SIPSyntax.isToken(parts[1])
        else { throw .invalidHeaderValue(name: "CSeq", value: String(text)) }
        self.init(number: number, method: SIPMethod(rawValue: String(parts[1])))
    }

    public var description: String { "\(number) \(method)" }
}

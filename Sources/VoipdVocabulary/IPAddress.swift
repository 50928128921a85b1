/// An IPv4 or IPv6 address, as the kernel's socket tables report it and as adoption rules
/// and `voipctl status` write it (dotted quad; RFC 5952 for IPv6).
public struct IPAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    public enum Family: String, Codable, Sendable {
        case ipv4, ipv6
    }

    public let family: Family
    /// The 16 bytes of an IPv6 address in network order, or an IPv4 address in the last 4
    /// (the first 12 zero): one storage, no allocation.
    private let high: UInt64
    private let low: UInt64

    /// An address from its bytes in network order: 4 for IPv4, 16 for IPv6; nil otherwise.
    public init?(bytes: some Collection<UInt8>) {
        switch bytes.count {
        case 4: family = .ipv4
        case 16: family = .ipv6
        default: return nil
        }
        var value: (UInt64, UInt64) = (0, 0)
        for (index, byte) in bytes.reversed().enumerated() {
            if index < 8 { value.1 |= UInt64(byte) << (8 * index) } else { value.0 |= UInt64(byte) << (8 * (index - 8)) }
        }
        high = value.0
        low = value.1
    }

    /// The bytes in network order: 4 or 16.
    public var bytes: [UInt8] {
        let all = (0..<16).map { index -> UInt8 in
            index < 8 ? UInt8(truncatingIfNeeded: high >> (8 * (7 - index))) : UInt8(truncatingIfNeeded: low >> (8 * (15 - index)))
        }
        return family == .ipv4 ? Array(all[12...]) : all
    }

    /// 0.0.0.0 or :: — a socket bound to it receives on every address of the machine.
    public var isUnspecified: Bool { high == 0 && low == 0 }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, how a dual-stack
    /// socket shows an IPv4 peer); the address itself otherwise.
    public var unmapped: IPAddress {
        guard family == .ipv6, high == 0, low >> 32 == 0xffff else { return self }
        return IPAddress(bytes: bytes[12...])!
    }

    /// Whether the first `length` bits equal those of `prefix` (of the same family, after
    /// unmapping both): `10.1.2.3` is in `10.0.0.0/8`.
    public func isIn(_ prefix: IPAddress, length: Int) -> Bool {
        let address = unmapped, prefix = prefix.unmapped
        guard address.family == prefix.family else { return false }
        let total = family == .ipv4 ? 32 : 128
        let bits = min(max(length, 0), total) + (128 - total)
        func masked(_ value: UInt64, _ start: Int) -> UInt64 {
            let keep = min(max(bits - start, 0), 64)
            return keep == 0 ? 0 : value & (UInt64.max << (64 - keep))
        }
        return masked(address.high, 0) == masked(prefix.high, 0) && masked(address.low, 64) == masked(prefix.low, 64)
    }

    public static func < (a: IPAddress, b: IPAddress) -> Bool {
        (a.family == .ipv4 ? 0 : 1, a.high, a.low) < (b.family == .ipv4 ? 0 : 1, b.high, b.low)
    }

    public var description: String {
        switch family {
        case .ipv4: return bytes.map(String.init).joined(separator: ".")
        case .ipv6: return Self.formatIPv6(bytes)
        }
    }

    // RFC 5952: lowercase hexadecimal without leading zeros; the longest run of two or more
    // zero groups (the first of equal runs) becomes "::"; an IPv4-mapped address ends in its
    // dotted quad.
    private static func formatIPv6(_ bytes: [UInt8]) -> String {
        let groups = stride(from: 0, to: 16, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xffff {
            return "::ffff:" + bytes[12...].map(String.init).joined(separator: ".")
        }
        var best = (start: -1, length: 0)
        var index = 0
        while index < 8 {
            guard groups[index] == 0 else {
                index += 1
                continue
            }
            var end = index
            while end < 8, groups[end] == 0 { end += 1 }
            if end - index > best.length { best = (index, end - index) }
            index = end
        }
        let hex = groups.map { String($0, radix: 16) }
        guard best.length >= 2 else { return hex.joined(separator: ":") }
        let head = hex[..<best.start].joined(separator: ":")
        let tail = hex[(best.start + best.length)...].joined(separator: ":")
        return head + "::" + tail
    }
}

extension IPAddress {
    /// Parses a dotted quad (`192.0.2.1`, no leading zeros) or an IPv6 address (`2001:db8::1`,
    /// `::ffff:192.0.2.1`; no zone, no brackets). Nil for anything else: voipd never resolves
    /// host names.
    public init?(_ text: some StringProtocol) {
        if let bytes = Self.parseIPv4(Substring(text)) {
            self.init(bytes: bytes)
        } else if let bytes = Self.parseIPv6(Substring(text)) {
            self.init(bytes: bytes)
        } else {
            return nil
        }
    }

    private static func parseIPv4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }),
                  part.count == 1 || part.first != "0", let value = UInt8(part) else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    private static func parseIPv6(_ text: Substring) -> [UInt8]? {
        guard text.contains(":"), text.count <= 45 else { return nil }
        let gaps = text.ranges(of: "::")
        guard gaps.count <= 1 else { return nil }
        let halves = gaps.first.map { [text[..<$0.lowerBound], text[$0.upperBound...]] } ?? [text]
        func groups(_ part: Substring, allowIPv4: Bool) -> [UInt8]? {
            if part.isEmpty { return [] }
            var bytes: [UInt8] = []
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            for (index, field) in fields.enumerated() {
                if allowIPv4, index == fields.count - 1, field.contains(".") {
                    guard let quad = parseIPv4(field) else { return nil }
                    bytes += quad
                    continue
                }
                guard (1...4).contains(field.count), field.allSatisfy(\.isHexDigit), let value = UInt16(field, radix: 16) else { return nil }
                bytes += [UInt8(value >> 8), UInt8(value & 0xff)]
            }
            return bytes
        }
        if halves.count == 1 {
            guard let bytes = groups(halves[0], allowIPv4: true), bytes.count == 16 else { return nil }
            return bytes
        }
        guard let head = groups(halves[0], allowIPv4: false), let tail = groups(halves[1], allowIPv4: true),
              head.count + tail.count <= 14 else { return nil }
        return head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
    }
}

extension IPAddress: Codable {
    /// Encoded as its text.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let address = IPAddress(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(text)' is not an IPv4 or IPv6 address")
        }
        self = address
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

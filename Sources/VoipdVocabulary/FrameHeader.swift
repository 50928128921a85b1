/// The 8-byte header in front of every message of voipd's packet protocols: the control
/// protocol (docs/PROTOCOL.md) and the one between voipd and its transfer agents. Its
/// numbers are little-endian:
///
///     offset 0  u32  body length in bytes
///     offset 4  u16  message type
///     offset 6  u8   descriptors attached with SCM_RIGHTS
///     offset 7  u8   protocol version
///
/// Each protocol checks the fields against its own rules (VoipdProtocol's `Frame`,
/// VoipdTransfers' `AgentFrame`); this type only reads and writes them.
public struct FrameHeader: Equatable, Sendable {
    /// The header's length in bytes.
    public static let size = 8

    public var bodyLength: UInt32
    public var type: UInt16
    public var descriptors: UInt8
    public var version: UInt8

    @inlinable
    public init(bodyLength: UInt32, type: UInt16, descriptors: UInt8, version: UInt8) {
        self.bodyLength = bodyLength
        self.type = type
        self.descriptors = descriptors
        self.version = version
    }

    /// The header at the start of `packet`; nil when the packet is shorter than a header.
    @inlinable
    public init?(parsing packet: [UInt8]) {
        guard packet.count >= Self.size else { return nil }
        bodyLength = UInt32(packet[0]) | UInt32(packet[1]) << 8 | UInt32(packet[2]) << 16 | UInt32(packet[3]) << 24
        type = UInt16(packet[4]) | UInt16(packet[5]) << 8
        descriptors = packet[6]
        version = packet[7]
    }

    /// Appends the header's bytes to `packet`.
    @inlinable
    public func append(to packet: inout [UInt8]) {
        packet.append(contentsOf: Self.lengthBytes(bodyLength))
        packet.append(contentsOf: [UInt8(truncatingIfNeeded: type), UInt8(truncatingIfNeeded: type >> 8), descriptors, version])
    }

    /// Writes the length of what follows the header into `packet`, built in place: a header
    /// for an empty body, then the body appended.
    @inlinable
    public static func setBodyLength(of packet: inout [UInt8]) {
        packet.replaceSubrange(0..<4, with: lengthBytes(UInt32(packet.count - size)))
    }

    @inlinable
    static func lengthBytes(_ length: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: length), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 24)]
    }
}

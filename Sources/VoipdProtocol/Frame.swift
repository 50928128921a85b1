import VoipdVocabulary

/// The framing: every message is one packet on an `AF_UNIX` `SOCK_SEQPACKET` connection,
/// made of an 8-byte header (``FrameHeader``) and a UTF-8 JSON body.
///
///     offset 0  u32 LE  body length in bytes
///     offset 4  u16 LE  message type (``MessageType``)
///     offset 6  u8      number of descriptors attached with SCM_RIGHTS
///     offset 7  u8      protocol version (1)
///     offset 8  body
public enum Frame {
    public static let headerSize = FrameHeader.size
    public static let version: UInt8 = 1
    /// The largest packet either side sends or accepts, header included.
    public static let maximumSize = 65536
    /// The most descriptors in one packet (the kernel's SCM_MAX_FD is 253).
    public static let maximumDescriptors = 253

    /// Header and body as one packet.
    public static func encode(type: MessageType, body: [UInt8], descriptorCount: Int) -> [UInt8] {
        var packet = [UInt8]()
        packet.reserveCapacity(headerSize + body.count)
        FrameHeader(bodyLength: UInt32(body.count), type: type.rawValue, descriptors: UInt8(descriptorCount), version: version).append(to: &packet)
        packet.append(contentsOf: body)
        return packet
    }

    /// A header for a body to be appended in place, with room for `bodyCapacity` bytes of it;
    /// ``setBodyLength(of:)`` then writes its length.
    public static func header(type: MessageType, descriptorCount: Int, bodyCapacity: Int) -> [UInt8] {
        var packet = [UInt8]()
        packet.reserveCapacity(headerSize + bodyCapacity)
        FrameHeader(bodyLength: 0, type: type.rawValue, descriptors: UInt8(descriptorCount), version: version).append(to: &packet)
        return packet
    }

    /// Writes the length of what follows the header into a packet built in place (a header
    /// for an empty body, then the body appended).
    public static func setBodyLength(of packet: inout [UInt8]) {
        FrameHeader.setBodyLength(of: &packet)
    }

    /// A validated packet: its type, its body, and the descriptor count it declared.
    public struct Decoded: Sendable {
        public var type: MessageType
        public var body: ArraySlice<UInt8>
        public var declaredDescriptors: Int
    }

    /// Validates a received packet. `length` is the packet's real length (which may exceed
    /// `bytes.count` if it was cut); `descriptors` how many actually arrived.
    public static func decode(bytes: [UInt8], length: Int, descriptors: Int, controlTruncated: Bool) throws(ProtocolError) -> Decoded {
        if controlTruncated {
            throw ProtocolError(.tooManyDescriptors, "more descriptors arrived than any message carries (MSG_CTRUNC); all were closed")
        }
        if length > maximumSize {
            throw ProtocolError(.frameTooLarge, "packet of \(length) bytes exceeds the maximum of \(maximumSize)")
        }
        // A reader with a buffer smaller than the maximum sees a consistent prefix of a longer
        // packet: only the real length tells, whatever the buffer.
        guard length == bytes.count else {
            throw ProtocolError(.truncatedFrame, "packet of \(length) bytes was cut to \(bytes.count) when read")
        }
        guard let header = FrameHeader(parsing: bytes) else {
            throw ProtocolError(.truncatedFrame, "packet of \(bytes.count) bytes is shorter than the \(headerSize)-byte header")
        }
        let bodyLength = Int(header.bodyLength)
        let declared = Int(header.descriptors)
        guard header.version == version else {
            throw ProtocolError(.unsupportedVersion, "protocol version \(header.version) is not supported; this daemon speaks \(version)")
        }
        if headerSize + bodyLength > maximumSize {
            throw ProtocolError(.frameTooLarge, "header declares a \(bodyLength)-byte body; the maximum frame is \(maximumSize) bytes")
        }
        guard bytes.count - headerSize == bodyLength else {
            throw ProtocolError(.truncatedFrame, "header declares a \(bodyLength)-byte body but the packet carries \(bytes.count - headerSize)")
        }
        guard declared == descriptors else {
            throw ProtocolError(.descriptorMismatch, "header declares \(declared) descriptors but \(descriptors) arrived; all were closed")
        }
        guard let type = MessageType(rawValue: header.type) else {
            throw ProtocolError(.unknownType, "unknown message type \(header.type)")
        }
        return Decoded(type: type, body: bytes[headerSize...], declaredDescriptors: declared)
    }
}

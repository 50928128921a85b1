import FoundationEssentials
import VoipdVocabulary

/// The framing between voipd and its transfer agents: one message per packet on an
/// `AF_UNIX` `SOCK_SEQPACKET` socket pair, with the control protocol's 8-byte header
/// (``FrameHeader``, docs/PROTOCOL.md) and a JSON body. The agent's messages have their own two types, so a
/// packet of one protocol can never be taken for the other's.
///
///     offset 0  u32 LE  body length
///     offset 4  u16 LE  1: AgentCommand (voipd → agent), 2: AgentReport (agent → voipd)
///     offset 6  u8      descriptors (always 0)
///     offset 7  u8      version (1)
public enum AgentFrame {
    public static let headerSize = FrameHeader.size
    public static let version: UInt8 = 1
    public static let maximumSize = 65536
    public static let commandType: UInt16 = 1
    public static let reportType: UInt16 = 2

    public struct Error: Swift.Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// A whole packet.
    public static func encode(_ message: some Encodable, type: UInt16, encoder: JSONEncoder) throws -> [UInt8] {
        let body = try encoder.encode(message)
        guard headerSize + body.count <= maximumSize else {
            throw Error(description: "a message of \(body.count) bytes does not fit in one \(maximumSize)-byte frame")
        }
        var packet: [UInt8] = []
        packet.reserveCapacity(headerSize + body.count)
        FrameHeader(bodyLength: UInt32(body.count), type: type, descriptors: 0, version: version).append(to: &packet)
        packet.append(contentsOf: body)
        return packet
    }

    /// Validates a packet (`length` is its real length, which may exceed the bytes read)
    /// and decodes its body.
    public static func decode<T: Decodable>(_: T.Type, type: UInt16, packet: [UInt8], length: Int, decoder: JSONDecoder) throws(Error) -> T {
        guard length <= maximumSize, packet.count == length else { throw Error(description: "a packet of \(length) bytes exceeds \(maximumSize)") }
        guard let header = FrameHeader(parsing: packet) else {
            throw Error(description: "a packet of \(packet.count) bytes is shorter than the header")
        }
        guard header.version == version else { throw Error(description: "version \(header.version) is not \(version)") }
        guard header.type == type else { throw Error(description: "message type \(header.type) where \(type) was expected") }
        guard header.descriptors == 0 else { throw Error(description: "descriptors declared on a transfer-agent message") }
        guard Int(header.bodyLength) == packet.count - headerSize else {
            throw Error(description: "the header declares \(header.bodyLength) bytes but the packet carries \(packet.count - headerSize)")
        }
        do {
            return try decoder.decode(T.self, from: Data(packet[headerSize...]))
        } catch {
            throw Error(description: "malformed \(T.self): \(error)")
        }
    }
}

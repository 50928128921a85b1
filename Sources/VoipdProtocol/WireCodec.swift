import Foundation
import VoipdSystem

/// Encodes and decodes frame bodies (JSON via Codable) and sends or receives whole frames.
/// Holds its coders, so it belongs to one thread.
public final class WireCodec {
    private let encoder: JSONEncoder
    private let decoder = JSONDecoder()

    public init() {
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    /// A whole packet: header and JSON body.
    public func packet(_ type: MessageType, _ body: some Encodable, descriptorCount: Int = 0) throws -> [UInt8] {
        if let direct = body as? any DirectJSONEncodable {
            var packet = Frame.encode(type: type, body: [], descriptorCount: descriptorCount)
            direct.appendJSON(to: &packet)
            let length = UInt32(packet.count - Frame.headerSize)
            guard packet.count <= Frame.maximumSize else {
                throw ProtocolError(.frameTooLarge, "a \(type) body of \(length) bytes does not fit in one frame")
            }
            packet.replaceSubrange(0..<4, with: [UInt8(length & 0xff), UInt8(length >> 8 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 24)])
            return packet
        }
        let json = try encoder.encode(body)
        guard Frame.headerSize + json.count <= Frame.maximumSize else {
            throw ProtocolError(.frameTooLarge, "a \(type) body of \(json.count) bytes does not fit in one frame")
        }
        return Frame.encode(type: type, body: Array(json), descriptorCount: descriptorCount)
    }

    /// The size of a value's JSON encoding.
    public func encodedSize(_ value: some Encodable) -> Int {
        (try? encoder.encode(value).count) ?? 0
    }

    /// Sends one frame with its descriptors.
    public func send(_ type: MessageType, _ body: some Encodable, on fd: CInt, descriptors: [CInt] = []) throws {
        try Socket.send(fd, bytes: packet(type, body, descriptorCount: descriptors.count), descriptors: descriptors)
    }

    /// Decodes a body; malformed JSON is a `badRequest`.
    public func decode<T: Decodable>(_ type: T.Type, from body: ArraySlice<UInt8>) throws(ProtocolError) -> T {
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            throw ProtocolError(.badRequest, "malformed \(T.self) body: \(describe(error))")
        } catch {
            throw ProtocolError(.badRequest, "malformed \(T.self) body: \(error)")
        }
    }

    /// Reads one frame from a non-blocking connection. A bad frame throws a
    /// `ProtocolError`, and every descriptor it carried is closed by then.
    /// `maxDescriptors` is the room made for descriptors: more than that arrive with
    /// MSG_CTRUNC (the kernel closes the ones that did not fit) and are refused.
    public func receive(from fd: CInt, maxDescriptors: Int = Frame.maximumDescriptors) throws -> Received {
        guard let message = try Socket.receive(fd, maxBytes: Frame.maximumSize + 1, maxDescriptors: maxDescriptors) else {
            return .nothing
        }
        if message.isEndOfStream && message.descriptors.count == 0 { return .endOfStream }
        // Truncated with room to spare: the receiver could not install them (out of
        // descriptors itself), which is not the sender's fault. The frame stays valid.
        let lost = message.controlTruncated && message.descriptors.count < maxDescriptors
        do {
            let declared = message.bytes.count >= Frame.headerSize ? Int(message.bytes[6]) : 0
            let decoded = try Frame.decode(bytes: message.bytes, length: message.length,
                                           descriptors: lost ? declared : message.descriptors.count,
                                           controlTruncated: message.controlTruncated && !lost)
            if lost { message.descriptors.closeAll() }
            return .frame(IncomingFrame(type: decoded.type, body: decoded.body, descriptors: lost ? DescriptorBag(adopting: []) : message.descriptors,
                                        descriptorsLost: lost))
        } catch {
            message.descriptors.closeAll()
            throw error
        }
    }

    private func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): return "missing field \"\(key.stringValue)\""
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "field \"\(path)\": \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}

/// What a read from a connection found.
public enum Received {
    case frame(IncomingFrame)
    /// The peer closed the connection.
    case endOfStream
    /// Nothing is waiting (non-blocking socket).
    case nothing
}

/// A validated frame and the descriptors that came with it.
public struct IncomingFrame {
    public var type: MessageType
    public var body: ArraySlice<UInt8>
    public var descriptors: DescriptorBag
    /// Descriptors were sent with it but could not be received (the receiver was out of
    /// descriptors); `descriptors` is empty.
    public var descriptorsLost = false
}

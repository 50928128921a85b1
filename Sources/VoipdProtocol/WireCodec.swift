import FoundationEssentials

/// Encodes and decodes frames: whole packets out, bodies (JSON via Codable) in. No I/O:
/// VoipdProtocolIO sends and receives them. Holds its coders, so it belongs to one thread.
public final class WireCodec {
    private let encoder: JSONEncoder
    private let decoder = JSONDecoder()
    /// Where ``encodedSize(_:)`` writes, its capacity kept.
    private var scratch: [UInt8] = []

    public init() {
        encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    /// A whole packet: header and JSON body.
    public func packet(_ type: MessageType, _ body: some Encodable, descriptorCount: Int = 0) throws -> [UInt8] {
        if let direct = body as? any DirectJSONEncodable, direct.encodesDirectly {
            var packet = Frame.encode(type: type, body: [], descriptorCount: descriptorCount)
            direct.appendJSON(to: &packet)
            guard packet.count <= Frame.maximumSize else {
                throw ProtocolError(.frameTooLarge, "a \(type) body of \(packet.count - Frame.headerSize) bytes does not fit in one frame")
            }
            Frame.setBodyLength(of: &packet)
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
        if let direct = value as? any DirectJSONEncodable {
            scratch.removeAll(keepingCapacity: true)
            direct.appendJSON(to: &scratch)
            return scratch.count
        }
        return (try? encoder.encode(value).count) ?? 0
    }

    /// Decodes a body; malformed JSON is a `badRequest`. Bodies of the request path in the
    /// plain form clients write are read directly (``DirectJSONDecodable``); anything else,
    /// and everything that is not valid, goes to JSONDecoder.
    public func decode<T: Decodable>(_ type: T.Type, from body: ArraySlice<UInt8>) throws(ProtocolError) -> T {
        if let direct = T.self as? any DirectJSONDecodable.Type, let value = DirectJSONReader.decode(direct, from: body) as? T {
            return value
        }
        do {
            return try decoder.decode(T.self, from: Data(body))
        } catch let error as DecodingError {
            throw ProtocolError(.badRequest, "malformed \(T.self) body: \(describe(error))")
        } catch {
            throw ProtocolError(.badRequest, "malformed \(T.self) body: \(error)")
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

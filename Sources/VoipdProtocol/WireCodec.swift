import FoundationEssentials

/// Encodes and decodes frames: whole packets out, bodies (JSON via Codable) in. No I/O:
/// VoipdProtocolIO sends and receives them. Holds its coders, so it belongs to one thread.
public final class WireCodec {
    // Made at their first use: a client whose bodies are all read and written directly
    // (`voipctl status`) never makes them, and JSONDecoder's init alone was 27,000
    // instructions of a `voipctl status` run (callgrind; docs/BENCHMARKS.md).
    private lazy var encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    private lazy var decoder = JSONDecoder()
    private var receiveStorage: UnsafeMutableRawBufferPointer?

    public init() {}

    deinit { receiveStorage?.deallocate() }

    /// Where VoipdProtocolIO reads a packet: room for the largest and one byte more (a
    /// longer one shows as cut). Allocated when first asked for and kept, so that a packet
    /// of tens of bytes does not cost an allocation of 64 KiB; its pages are touched only as
    /// far as packets reach.
    public var receiveBuffer: UnsafeMutableRawBufferPointer {
        if let receiveStorage { return receiveStorage }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Frame.maximumSize + 1, alignment: 1)
        receiveStorage = buffer
        return buffer
    }

    /// A whole packet: header and JSON body.
    public func packet(_ type: MessageType, _ body: some Encodable, descriptorCount: Int = 0) throws -> [UInt8] {
        if let direct = body as? any DirectJSONEncodable {
            return try directPacket(type, direct, descriptorCount: descriptorCount)
        }
        return try encodedPacket(type, body, descriptorCount: descriptorCount)
    }

    /// A whole packet whose body writes itself (``DirectJSONEncodable``): no run-time cast,
    /// and, inlined where it is called with the body's type, nothing looked up at run time
    /// either (the request path's requests and replies, the wake's events).
    @inlinable
    public func packet(_ type: MessageType, _ body: some DirectJSONEncodable, descriptorCount: Int = 0) throws -> [UInt8] {
        try directPacket(type, body, descriptorCount: descriptorCount)
    }

    @inlinable
    func directPacket(_ type: MessageType, _ body: some DirectJSONEncodable, descriptorCount: Int) throws -> [UInt8] {
        guard body.encodesDirectly else { return try encodedPacket(type, body, descriptorCount: descriptorCount) }
        return try JSONWriter.withScratch { json throws(ProtocolError) in
            json.frameHeader(type: type, descriptorCount: descriptorCount)
            body.writeJSON(to: &json)
            return try json.packet(type)
        }
    }

    /// A packet whose body JSONEncoder writes.
    @usableFromInline
    func encodedPacket(_ type: MessageType, _ body: some Encodable, descriptorCount: Int) throws -> [UInt8] {
        let json = try encoder.encode(body)
        guard Frame.headerSize + json.count <= Frame.maximumSize else {
            throw ProtocolError(.frameTooLarge, "a \(type) body of \(json.count) bytes does not fit in one frame")
        }
        return Frame.encode(type: type, body: Array(json), descriptorCount: descriptorCount)
    }

    /// The size of a value's JSON encoding.
    public func encodedSize(_ value: some Encodable) -> Int {
        if let direct = value as? any DirectJSONEncodable {
            return JSONWriter.withScratch { json in
                direct.writeJSON(to: &json)
                return json.count
            }
        }
        return (try? encoder.encode(value).count) ?? 0
    }

    /// Decodes a body; malformed JSON is a `badRequest`. Bodies of the request path in the
    /// plain form clients write are read directly (``DirectJSONDecodable``); anything else,
    /// and everything that is not valid, goes to JSONDecoder.
    public func decode<T: Decodable>(_ type: T.Type, from body: ArraySlice<UInt8>) throws(ProtocolError) -> T {
        if let direct = T.self as? any DirectJSONDecodable.Type {
            return try directDecode(direct, from: body) as! T
        }
        return try decodeWithFoundation(T.self, from: body)
    }

    /// Decodes a body of a type that can be read directly, as the decoding of any type does,
    /// without a run-time cast, and inlined where it is called with the type.
    @inlinable
    public func decode<T: DirectJSONDecodable>(_ type: T.Type, from body: ArraySlice<UInt8>) throws(ProtocolError) -> T {
        try directDecode(T.self, from: body)
    }

    @inlinable
    func directDecode<T: DirectJSONDecodable>(_ type: T.Type, from body: ArraySlice<UInt8>) throws(ProtocolError) -> T {
        if let value = DirectJSONReader.decode(T.self, from: body) { return value }
        return try decodeWithFoundation(T.self, from: body)
    }

    /// JSONDecoder's reading: what a body not in the plain form decodes to, or why it does not.
    @usableFromInline
    func decodeWithFoundation<T: Decodable>(_ type: T.Type, from body: ArraySlice<UInt8>) throws(ProtocolError) -> T {
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

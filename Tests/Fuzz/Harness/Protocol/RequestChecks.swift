import VoipdDaemon
import VoipdProtocol

/// What must hold for any body a client sends, whatever its type and descriptor count.
enum RequestChecks {
    nonisolated(unsafe) static let codec = WireCodec()

    /// Decodes a request as the daemon does. A refusal is a clear error of the codes
    /// docs/PROTOCOL.md gives; a request that decodes reads back the same once re-encoded by
    /// the same types (what a client writes is what the daemon reads).
    static func check(type: MessageType, body: ArraySlice<UInt8>, descriptors: Int) {
        let request: ClientRequest
        do {
            request = try ClientRequest(type: type, body: body, descriptorCount: descriptors, codec: codec)
        } catch {
            require([.unknownType, .tooManyDescriptors, .badRequest].contains(error.code), "\(type) refused with \(error)")
            require(!error.message.isEmpty, "\(type) refused without a message")
            requireOneLogLine("\(type) refused: \(error)")
            return
        }
        require(type.isRequest, "\(type) is not a request but decoded as one")
        require((type.minimumDescriptorsFromClient...type.maximumDescriptorsFromClient).contains(descriptors),
                "\(type) accepted with \(descriptors) descriptors")
        guard let packet = encode(request, descriptors: descriptors) else { return }
        let frame: Frame.Decoded
        let again: ClientRequest
        do {
            frame = try Frame.decode(bytes: packet, length: packet.count, descriptors: descriptors, controlTruncated: false)
            again = try ClientRequest(type: frame.type, body: frame.body, descriptorCount: descriptors, codec: codec)
        } catch {
            finding("\(type) re-encoded as \(String(decoding: packet.dropFirst(Frame.headerSize), as: UTF8.self)) does not decode: \(error)")
        }
        require(frame.type == type, "\(type) re-encoded as \(frame.type)")
        let repeated = encode(again, descriptors: descriptors)
        require(repeated == packet, "\(type) does not read back the same: \(String(decoding: packet.dropFirst(Frame.headerSize), as: UTF8.self)) then \(repeated.map { String(decoding: $0.dropFirst(Frame.headerSize), as: UTF8.self) } ?? "nothing")")
    }

    /// The packet a client would send for `request`; nil when it does not fit in one frame
    /// (a body re-encoded can grow: "1e2" becomes "100") or has no body.
    static func encode(_ request: ClientRequest, descriptors: Int) -> [UInt8]? {
        func packet(_ type: MessageType, _ body: some Encodable) -> [UInt8]? {
            do {
                return try codec.packet(type, body, descriptorCount: descriptors)
            } catch let error as ProtocolError where error.code == .frameTooLarge {
                return nil
            } catch {
                finding("\(type) decoded but does not encode: \(error)")
            }
        }
        switch request {
        case .hello(let body): return packet(.hello, body)
        case .registerSocket(let body): return packet(.registerSocket, body)
        case .unregisterSocket(let body): return packet(.unregisterSocket, body)
        case .retrieveSocket(let body): return packet(.retrieveSocket, body)
        case .acknowledge(let body): return packet(.acknowledge, body)
        case .beginBackgroundTask(let body): return packet(.beginBackgroundTask, body)
        case .endBackgroundTask(let body): return packet(.endBackgroundTask, body)
        case .setKeepAliveTimeout(let body): return packet(.setKeepAliveTimeout, body)
        case .setAudioSessionActive(let body): return packet(.setAudioSessionActive, body)
        case .transferSession(let body): return packet(.transferSession, body)
        case .transferCreate(let body): return packet(.transferCreate, body)
        case .transferTask(let body): return packet(.transferTask, body)
        case .launch(let body): return packet(.launch, body)
        case .status(let body): return packet(.status, body)
        case .sockets(let body): return packet(.sockets, body)
        case .appCommand(let body): return packet(.appCommand, body)
        case .systemCommand(let body): return packet(.systemCommand, body)
        case .events(let body): return packet(.events, body)
        case .stats: return nil
        case .upgrade(let body): return packet(.upgrade, body)
        case .transfers(let body): return packet(.transfers, body)
        }
    }

    /// The daemon logs every refusal with its message, which quotes what the client sent:
    /// the line must stay one line, free of control characters.
    static func requireOneLogLine(_ message: String) {
        let line = Logger.line(.info, message)
        require(line.last == UInt8(ascii: "\n") && !line.dropLast().contains { $0 < 0x20 || $0 == 0x7f },
                "the log line for \"\(message)\" is not one line: \(String(decoding: line, as: UTF8.self))")
    }
}

import VoipdVocabulary

// The request path's messages, written and read directly (DirectJSON.swift,
// DirectJSONReader.swift): an app's socket requests and acknowledgements, their replies, the
// events apps decode on every wake, and the `sockets` listing. Keys are written in sorted
// order and nil optionals left out, as JSONEncoder does with `.sortedKeys`.

extension NamedRequest: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("id", id)
        json.field("name", name)
        json.closeObject()
    }

    private static let keys: [StaticString] = ["id", "name"]

    public init?(directJSON reader: inout DirectJSONReader) {
        guard let (id, name) = reader.twoKeyObject(keys: Self.keys, { $0.integer(UInt64.self) }, { $0.string() }) else { return nil }
        self.init(id: id, name: name)
    }
}

extension AcknowledgeMessage: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("event", event)
        json.closeObject()
    }

    private static let keys: [StaticString] = ["event"]

    public init?(directJSON reader: inout DirectJSONReader) {
        guard let event = reader.oneKeyObject(keys: Self.keys, { $0.integer(UInt64.self) }) else { return nil }
        self.init(event: event)
    }
}

extension RequestID: DirectJSONDecodable {
    private static let keys: [StaticString] = ["id"]

    public init?(directJSON reader: inout DirectJSONReader) {
        var id: UInt64??
        guard reader.object(keys: Self.keys, { _, reader in
            id = reader.optional { $0.integer(UInt64.self) }
            return id != nil
        }) else { return nil }
        self.init(id: id ?? nil)
    }
}

extension EmptyResult: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.closeObject()
    }

    public init?(directJSON reader: inout DirectJSONReader) {
        guard reader.object(keys: [], { _, _ in false }) else { return nil }
        self.init()
    }
}

extension BackgroundTaskResult: DirectJSONEncodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("task", task)
        json.closeObject()
    }
}

extension ProtocolError: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("code", code.rawValue)
        json.field("message", message)
        json.closeObject()
    }

    private static let keys: [StaticString] = ["code", "message"]

    public init?(directJSON reader: inout DirectJSONReader) {
        guard let (code, message) = reader.twoKeyObject(keys: Self.keys, { $0.string() }, { $0.string() }) else { return nil }
        // As init(from:) reads a code this version does not know.
        if let known = Code(rawValue: code) {
            self.init(known, message)
        } else {
            self.init(.internalError, "\(code): \(message)")
        }
    }
}

extension HeldSocketStatus: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("app", app)
        json.field("bytesAvailable", bytesAvailable)
        if let connectionsWaiting { json.field("connectionsWaiting", connectionsWaiting) }
        json.field("kind", kind)
        json.field("name", name)
        json.field("peerClosed", peerClosed)
        json.field("registeredAt", registeredAt)
        if let role { json.field("role", role) }
        json.field("watching", watching)
        json.closeObject()
    }

    private static let keys: [StaticString] = ["app", "bytesAvailable", "kind", "name", "peerClosed", "registeredAt", "watching",
                                               "role", "connectionsWaiting"]

    public init?(directJSON reader: inout DirectJSONReader) {
        var app: String?, name: String?, kind: String?
        var bytesAvailable: Int?
        var peerClosed: Bool?, watching: Bool?
        var registeredAt: Double?
        var role: String??, connectionsWaiting: Int??
        guard reader.object(keys: Self.keys, { key, reader in
            switch key {
            case 0: app = reader.string(); return app != nil
            case 1: bytesAvailable = reader.integer(); return bytesAvailable != nil
            case 2: kind = reader.string(); return kind != nil
            case 3: name = reader.string(); return name != nil
            case 4: peerClosed = reader.bool(); return peerClosed != nil
            case 5: registeredAt = reader.double(); return registeredAt != nil
            case 6: watching = reader.bool(); return watching != nil
            case 7: role = reader.optional { $0.string() }; return role != nil
            default: connectionsWaiting = reader.optional { $0.integer(Int.self) }; return connectionsWaiting != nil
            }
        }), let app, let name, let kind, let bytesAvailable, let peerClosed, let watching, let registeredAt else { return nil }
        self.init(app: app, name: name, kind: kind, role: role ?? nil, bytesAvailable: bytesAvailable, connectionsWaiting: connectionsWaiting ?? nil,
                  peerClosed: peerClosed, watching: watching, registeredAt: registeredAt)
    }
}

extension SocketResult: DirectJSONEncodable, DirectJSONDecodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("socket", socket)
        json.closeObject()
    }

    private static let keys: [StaticString] = ["socket"]

    public init?(directJSON reader: inout DirectJSONReader) {
        guard let socket = reader.oneKeyObject(keys: Self.keys, { HeldSocketStatus(directJSON: &$0) }) else { return nil }
        self.init(socket: socket)
    }
}

extension SocketsResult: DirectJSONEncodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("sockets", sockets)
        json.closeObject()
    }
}

extension EventsResult: DirectJSONEncodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("transitions", transitions)
        json.closeObject()
    }
}

extension EventMessage: DirectJSONDecodable {
    // "transfers" is known so that it is not skipped as an unknown key: an event carrying
    // background transfers' events is left to JSONDecoder, which reads them.
    private static let keys: [StaticString] = ["event", "kind", "socket", "bytesAvailable", "peerClosed", "state", "reason",
                                               "connectionsWaiting", "transfers"]

    public init?(directJSON reader: inout DirectJSONReader) {
        var event: UInt64?
        var kind: AppEventKind?
        var socket: String??, bytesAvailable: Int??, peerClosed: Bool??, connectionsWaiting: Int??
        var state: AppState?
        var reason: String?
        guard reader.object(keys: Self.keys, { key, reader in
            switch key {
            case 0: event = reader.integer(); return event != nil
            case 1: kind = reader.rawValue(); return kind != nil
            case 2: socket = reader.optional { $0.string() }; return socket != nil
            case 3: bytesAvailable = reader.optional { $0.integer(Int.self) }; return bytesAvailable != nil
            case 4: peerClosed = reader.optional { $0.bool() }; return peerClosed != nil
            case 5: state = reader.rawValue(); return state != nil
            case 6: reason = reader.string(); return reason != nil
            case 7: connectionsWaiting = reader.optional { $0.integer(Int.self) }; return connectionsWaiting != nil
            default: return false
            }
        }), let event, let kind, let state, let reason else { return nil }
        self.init(event: event, kind: kind, socket: socket ?? nil, bytesAvailable: bytesAvailable ?? nil, peerClosed: peerClosed ?? nil,
                  connectionsWaiting: connectionsWaiting ?? nil, state: state, reason: reason)
    }
}

// Reply's encoding and decoding are inlinable: a generic body, specialised for its result
// where it is sent or read (voipd's replies, an app's connection), costs no run-time look-ups
// of generic metadata on each request.
extension Reply: DirectJSONEncodable where Result: DirectJSONEncodable {
    @inlinable
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        if let error { json.field("error", error) }
        json.field("id", id)
        if let more { json.field("more", more) }
        json.field("ok", ok)
        if let result { json.field("result", result) }
        json.closeObject()
    }
}

/// A reply's keys, in the order ``Reply``'s decoding numbers them.
@usableFromInline
let replyKeys: [StaticString] = ["id", "ok", "result", "error", "more"]

extension Reply: DirectJSONDecodable where Result: DirectJSONDecodable {
    @inlinable
    public init?(directJSON reader: inout DirectJSONReader) {
        var id: UInt64?
        var ok: Bool?
        var result: Result??, error: ProtocolError??, more: Bool??
        guard reader.object(keys: replyKeys, { key, reader in
            switch key {
            case 0: id = reader.integer(); return id != nil
            case 1: ok = reader.bool(); return ok != nil
            case 2: result = reader.optional { Result(directJSON: &$0) }; return result != nil
            case 3: error = reader.optional { ProtocolError(directJSON: &$0) }; return error != nil
            default: more = reader.optional { $0.bool() }; return more != nil
            }
        }), let id, let ok else { return nil }
        self.init(id: id, ok: ok, result: result ?? nil, error: error ?? nil, more: more ?? nil)
    }
}

/// Frames sent on every wake, encoded without Foundation's `JSONEncoder`: on a CPU that voipd
/// shares with the app it has just resumed, every microsecond voipd spends before it sleeps
/// again delays the app. The output is exactly what `JSONEncoder` with `.sortedKeys` and
/// `.withoutEscapingSlashes` writes (a test holds them to it).
public protocol DirectJSONEncodable: Encodable {
    func appendJSON(to output: inout [UInt8])
}

/// Appends JSON tokens to a byte buffer.
struct JSONAppender {
    var output: [UInt8]
    private var first = true

    init(into output: [UInt8]) { self.output = output }

    mutating func open() {
        output.append(UInt8(ascii: "{"))
        first = true
    }

    mutating func close() { output.append(UInt8(ascii: "}")) }

    private mutating func key(_ name: StaticString) {
        if !first { output.append(UInt8(ascii: ",")) }
        first = false
        output.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { output.append(contentsOf: $0) }
        output.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        output.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func field<T: BinaryInteger>(_ name: StaticString, _ value: T) {
        key(name)
        output.append(contentsOf: String(value).utf8)
    }

    mutating func field(_ name: StaticString, _ value: Double) {
        key(name)
        // Swift's description is the shortest representation that reads back the same, as
        // JSONEncoder writes it; integral values lose their ".0" there too.
        var text = "\(value)"
        if text.hasSuffix(".0") { text.removeLast(2) }
        output.append(contentsOf: text.utf8)
    }

    private mutating func string(_ value: String) {
        output.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x0a: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0d: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0c: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xf)]])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

extension EventMessage: DirectJSONEncodable {
    public func appendJSON(to output: inout [UInt8]) {
        var json = JSONAppender(into: output)
        json.open()
        if let bytesAvailable { json.field("bytesAvailable", bytesAvailable) }
        if let connectionsWaiting { json.field("connectionsWaiting", connectionsWaiting) }
        json.field("event", event)
        json.field("kind", kind.rawValue)
        if let peerClosed { json.field("peerClosed", peerClosed) }
        json.field("reason", reason)
        if let socket { json.field("socket", socket) }
        json.field("state", state.rawValue)
        json.close()
        output = json.output
    }
}

extension TransitionRecord: DirectJSONEncodable {
    public func appendJSON(to output: inout [UInt8]) {
        var json = JSONAppender(into: output)
        json.open()
        json.field("app", app)
        json.field("from", from.rawValue)
        json.field("reason", reason)
        json.field("time", time)
        json.field("to", to.rawValue)
        json.close()
        output = json.output
    }
}

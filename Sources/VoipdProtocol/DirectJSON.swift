/// Frames sent on every wake and on the request path, encoded without Foundation's
/// `JSONEncoder`: on a CPU that voipd shares with the app it has just resumed, every
/// microsecond voipd spends before it sleeps again delays the app, and `JSONEncoder` takes
/// 4–8 µs for one of these bodies where appending its bytes takes a few hundred ns
/// (`voipd-bench codec`; docs/BENCHMARKS.md). The output is exactly what `JSONEncoder` with
/// `.sortedKeys` and `.withoutEscapingSlashes` writes (tests and the fuzz target hold them to it).
public protocol DirectJSONEncodable: Encodable {
    func appendJSON(to output: inout [UInt8])
    /// Whether ``appendJSON(to:)`` can write this value (else `JSONEncoder` does).
    var encodesDirectly: Bool { get }
}

extension DirectJSONEncodable {
    public var encodesDirectly: Bool { true }
}

/// Appends an object's fields to a byte buffer, taken from the caller and given back at the
/// end, so that appending never copies it. What generic bodies (`Reply`) call is inlinable,
/// so that they are specialised where they are encoded, not looked up at run time.
@usableFromInline
struct JSONAppender {
    @usableFromInline var output: [UInt8]
    @usableFromInline var first = true

    @inlinable
    init(taking output: inout [UInt8]) {
        self.output = output
        output = []
    }

    @inlinable
    mutating func finish(into output: inout [UInt8]) {
        swap(&self.output, &output)
    }

    /// An object of the fields `fields` appends, at the end of `output`.
    @inlinable
    static func object(into output: inout [UInt8], _ fields: (inout JSONAppender) -> Void) {
        var json = JSONAppender(taking: &output)
        json.output.append(UInt8(ascii: "{"))
        fields(&json)
        json.output.append(UInt8(ascii: "}"))
        json.finish(into: &output)
    }

    @usableFromInline
    mutating func key(_ name: StaticString) {
        if !first { output.append(UInt8(ascii: ",")) }
        first = false
        output.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { output.append(contentsOf: $0) }
        output.append(UInt8(ascii: "\""))
        output.append(UInt8(ascii: ":"))
    }

    @usableFromInline
    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    @usableFromInline
    mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        if value {
            output.append(contentsOf: [UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "u"), UInt8(ascii: "e")])
        } else {
            output.append(contentsOf: [UInt8(ascii: "f"), UInt8(ascii: "a"), UInt8(ascii: "l"), UInt8(ascii: "s"), UInt8(ascii: "e")])
        }
    }

    @inlinable
    mutating func field<T: FixedWidthInteger>(_ name: StaticString, _ value: T) {
        key(name)
        if value < 0 {
            output.append(UInt8(ascii: "-"))
            digits(UInt64(value.magnitude))
        } else {
            digits(UInt64(value))
        }
    }

    /// The decimal digits of `value`, without a String in between.
    @usableFromInline
    mutating func digits(_ value: UInt64) {
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &buffer) { bytes in
            var rest = value
            var start = bytes.count
            repeat {
                start -= 1
                bytes[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest != 0
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start...]))
        }
    }

    mutating func field(_ name: StaticString, _ value: Double) {
        key(name)
        // Swift's description is the shortest representation that reads back the same, as
        // JSONEncoder writes it; integral values lose their ".0" there too.
        // Its bytes are ASCII: looked at as bytes, not compared as a String.
        var text = value.description
        text.withUTF8 { bytes in
            let integral = bytes.count >= 2 && bytes[bytes.count - 2] == UInt8(ascii: ".") && bytes[bytes.count - 1] == UInt8(ascii: "0")
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[..<(integral ? bytes.count - 2 : bytes.count)]))
        }
    }

    /// A nested value under `name`.
    @inlinable
    mutating func field(_ name: StaticString, _ value: some DirectJSONEncodable) {
        key(name)
        value.appendJSON(to: &output)
    }

    /// An array of nested values under `name`.
    mutating func field<Element: DirectJSONEncodable>(_ name: StaticString, _ values: [Element]) {
        key(name)
        output.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            value.appendJSON(to: &output)
        }
        output.append(UInt8(ascii: "]"))
    }

    private mutating func string(_ value: String) {
        output.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { bytes in
            // Runs of bytes that need no escape are copied whole.
            var runStart = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                escape(byte)
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        output.append(UInt8(ascii: "\""))
    }

    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x0a: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0d: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0c: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        default:
            let hex: StaticString = "0123456789abcdef"
            hex.withUTF8Buffer { hex in
                output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                           hex[Int(byte >> 4)], hex[Int(byte & 0xf)]])
            }
        }
    }
}

extension EventMessage: DirectJSONEncodable {
    /// Transfer events are not on the wake path's hot loop, and are nested: JSONEncoder's.
    public var encodesDirectly: Bool { transfers == nil }

    public func appendJSON(to output: inout [UInt8]) {
        JSONAppender.object(into: &output) { json in
            if let bytesAvailable { json.field("bytesAvailable", bytesAvailable) }
            if let connectionsWaiting { json.field("connectionsWaiting", connectionsWaiting) }
            json.field("event", event)
            json.field("kind", kind.rawValue)
            if let peerClosed { json.field("peerClosed", peerClosed) }
            json.field("reason", reason)
            if let socket { json.field("socket", socket) }
            json.field("state", state.rawValue)
        }
    }
}

extension TransitionRecord: DirectJSONEncodable {
    public func appendJSON(to output: inout [UInt8]) {
        JSONAppender.object(into: &output) { json in
            json.field("app", app)
            json.field("from", from.rawValue)
            json.field("reason", reason)
            json.field("time", time)
            json.field("to", to.rawValue)
        }
    }
}

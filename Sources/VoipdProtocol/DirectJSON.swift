/// Frames sent on every wake and on the request path, encoded without Foundation's
/// `JSONEncoder`: on a CPU that voipd shares with the app it has just resumed, every
/// microsecond voipd spends before it sleeps again delays the app, and `JSONEncoder` takes
/// 4–8 µs for one of these bodies where appending its bytes takes a few hundred ns
/// (`voipd-bench codec`; docs/BENCHMARKS.md). The output is exactly what `JSONEncoder` with
/// `.sortedKeys` and `.withoutEscapingSlashes` writes (tests and the fuzz target hold them to it).
public protocol DirectJSONEncodable: Encodable {
    /// Writes the value's JSON at the end of what `json` holds.
    func writeJSON(to json: inout JSONWriter)
    /// Whether ``writeJSON(to:)`` can write this value (else `JSONEncoder` does).
    var encodesDirectly: Bool { get }
}

extension DirectJSONEncodable {
    public var encodesDirectly: Bool { true }

    /// Appends the value's JSON to `output`.
    public func appendJSON(to output: inout [UInt8]) {
        JSONWriter.withScratch { json in
            writeJSON(to: &json)
            json.append(to: &output)
        }
    }
}

/// Where a body is written directly: its bytes stored in place, in a buffer on the stack
/// that moves to the heap only for a body larger than it. Appending each piece to an
/// `[UInt8]` instead cost a call into the standard library's generic `append` (its
/// uniqueness and capacity checks) for each key, quote and comma: three quarters of writing
/// a reply with a socket's status (`HeldSocketStatus`, 4,400 instructions; callgrind, see
/// docs/BENCHMARKS.md). What it writes is only ever read out as bytes (``append(to:)``, a
/// packet); only this module writes with it. Not copyable: it may own what it grew into.
public struct JSONWriter: ~Copyable {
    @usableFromInline var start: UnsafeMutablePointer<UInt8>
    @usableFromInline var count = 0
    @usableFromInline var capacity: Int
    /// Whether ``start`` was allocated here (the scratch buffer was outgrown): freed here.
    @usableFromInline var owned = false

    @inlinable
    init(scratch: UnsafeMutableBufferPointer<UInt8>) {
        start = scratch.baseAddress!
        capacity = scratch.count
    }

    deinit {
        if owned { start.deallocate() }
    }

    /// The stack buffer's size: a reply with a socket's status (about 250 bytes) and an event fit.
    @inlinable
    static var scratchSize: Int { 1024 }

    /// Runs `body` with a writer on a buffer on the stack.
    @inlinable
    static func withScratch<R, E: Error>(_ body: (inout JSONWriter) throws(E) -> R) throws(E) -> R {
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: scratchSize) { buffer throws(E) -> R in
            var writer = JSONWriter(scratch: buffer)
            return try body(&writer)
        }
    }

    /// Makes room for `more` bytes.
    @inlinable
    mutating func reserve(_ more: Int) {
        if capacity - count < more { grow(to: count + more) }
    }

    @usableFromInline
    mutating func grow(to minimum: Int) {
        let grown = max(minimum, capacity * 2)
        let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        storage.initialize(from: start, count: count)
        if owned { start.deallocate() }
        start = storage
        capacity = grown
        owned = true
    }

    @inlinable
    mutating func byte(_ byte: UInt8) {
        reserve(1)
        start[count] = byte
        count += 1
    }

    @inlinable
    mutating func bytes(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress else { return }
        reserve(bytes.count)
        (start + count).initialize(from: source, count: bytes.count)
        count += bytes.count
    }

    /// What has been written.
    @inlinable
    var written: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: start, count: count) }

    /// Appends what has been written to `output`.
    @usableFromInline
    func append(to output: inout [UInt8]) {
        output.append(contentsOf: written)
    }

    /// A frame's header, its body's length left for ``packet(_:)`` to write.
    @inlinable
    mutating func frameHeader(type: MessageType, descriptorCount: Int) {
        reserve(Frame.headerSize)
        (start + count).initialize(repeating: 0, count: 4)
        start[count + 4] = UInt8(truncatingIfNeeded: type.rawValue)
        start[count + 5] = UInt8(truncatingIfNeeded: type.rawValue >> 8)
        start[count + 6] = UInt8(truncatingIfNeeded: descriptorCount)
        start[count + 7] = Frame.version
        count += Frame.headerSize
    }

    /// The packet written (``frameHeader(type:descriptorCount:)``, then a body), its body's
    /// length filled in; refused when it does not fit in one frame.
    @usableFromInline
    mutating func packet(_ type: MessageType) throws(ProtocolError) -> [UInt8] {
        guard count <= Frame.maximumSize else {
            throw ProtocolError(.frameTooLarge, "a \(type) body of \(count - Frame.headerSize) bytes does not fit in one frame")
        }
        let length = UInt32(count - Frame.headerSize)
        for index in 0..<4 { start[index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
        return Array(written)
    }
}

/// JSON's pieces, as `JSONEncoder` writes them with sorted keys and slashes unescaped. What
/// generic bodies (`Reply`) call is inlinable, so that they are specialised where they are
/// encoded, not looked up at run time.
extension JSONWriter {
    @inlinable
    mutating func openObject() { byte(UInt8(ascii: "{")) }

    @inlinable
    mutating func closeObject() { byte(UInt8(ascii: "}")) }

    /// `"name":`, after a comma unless it is the object's first key: the byte before a key
    /// is the object's `{` or the end of the value before it.
    @usableFromInline
    mutating func key(_ name: StaticString) {
        let length = name.utf8CodeUnitCount
        reserve(length + 4)
        if count > 0 && start[count - 1] != UInt8(ascii: "{") {
            start[count] = UInt8(ascii: ",")
            count += 1
        }
        start[count] = UInt8(ascii: "\"")
        (start + count + 1).initialize(from: name.utf8Start, count: length)
        start[count + 1 + length] = UInt8(ascii: "\"")
        start[count + 2 + length] = UInt8(ascii: ":")
        count += length + 3
    }

    @usableFromInline
    mutating func field(_ name: StaticString, _ value: String) {
        key(name)
        string(value)
    }

    @usableFromInline
    mutating func field(_ name: StaticString, _ value: Bool) {
        key(name)
        let word: StaticString = value ? "true" : "false"
        bytes(UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount))
    }

    @inlinable
    mutating func field<T: FixedWidthInteger>(_ name: StaticString, _ value: T) {
        key(name)
        if value < 0 {
            byte(UInt8(ascii: "-"))
            digits(UInt64(value.magnitude))
        } else {
            digits(UInt64(value))
        }
    }

    /// The decimal digits of `value`, without a String in between.
    @usableFromInline
    mutating func digits(_ value: UInt64) {
        // UInt64.max has 20 digits: written from the end of a 20-byte window.
        reserve(20)
        var length = 1
        var rest = value / 10
        while rest != 0 {
            length += 1
            rest /= 10
        }
        rest = value
        var index = count + length
        repeat {
            index -= 1
            start[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        } while rest != 0
        count += length
    }

    @usableFromInline
    mutating func field(_ name: StaticString, _ value: Double) {
        key(name)
        if microseconds(value) { return }
        // Swift's description is the shortest representation that reads back the same, as
        // JSONEncoder writes it; integral values lose their ".0" there too.
        var text = value.description
        text.withUTF8 { text in
            let integral = text.count >= 2 && text[text.count - 2] == UInt8(ascii: ".") && text[text.count - 1] == UInt8(ascii: "0")
            bytes(UnsafeBufferPointer(rebasing: text[..<(integral ? text.count - 2 : text.count)]))
        }
    }

    /// Writes `value` if it is a time to the microsecond (the double nearest a whole number
    /// of microseconds) from 1 s to 2^32 s, as voipd's `registeredAt` is, and says whether it
    /// did: its microseconds' digits with the trailing zeros of the fraction dropped, with no
    /// String and no search for the shortest digits (`description` took 1,200 instructions).
    /// That is the shortest representation that reads back as `value`, as `description`
    /// writes it: doubles there are at most 2^-21 s apart, less than a microsecond, so any
    /// decimal with fewer digits is further from `value` than half their spacing (it reads
    /// back as another double), and `description` uses no exponent below 2^53.
    @usableFromInline
    mutating func microseconds(_ value: Double) -> Bool {
        guard value >= 1, value < 4_294_967_296 else { return false }
        let micros = UInt64((value * 1e6).rounded())
        guard Double(micros) / 1e6 == value else { return false }
        digits(micros / 1_000_000)
        var fraction = micros % 1_000_000
        guard fraction != 0 else { return true }
        var places = 6
        while fraction % 10 == 0 {
            fraction /= 10
            places -= 1
        }
        reserve(places + 1)
        start[count] = UInt8(ascii: ".")
        var index = count + places
        while index > count {
            start[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction % 10)
            fraction /= 10
            index -= 1
        }
        count += places + 1
        return true
    }

    /// A nested value under `name`.
    @inlinable
    mutating func field(_ name: StaticString, _ value: some DirectJSONEncodable) {
        key(name)
        value.writeJSON(to: &self)
    }

    /// An array of nested values under `name`.
    @usableFromInline
    mutating func field<Element: DirectJSONEncodable>(_ name: StaticString, _ values: [Element]) {
        key(name)
        byte(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { byte(UInt8(ascii: ",")) }
            value.writeJSON(to: &self)
        }
        byte(UInt8(ascii: "]"))
    }

    /// An array of strings under `name`.
    @usableFromInline
    mutating func field(_ name: StaticString, _ values: [String]) {
        key(name)
        byte(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { byte(UInt8(ascii: ",")) }
            string(value)
        }
        byte(UInt8(ascii: "]"))
    }

    @usableFromInline
    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { text in
            reserve(text.count + 2)
            start[count] = UInt8(ascii: "\"")
            count += 1
            // Runs of bytes that need no escape are copied whole.
            var runStart = 0
            for index in 0..<text.count {
                let byte = text[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes(UnsafeBufferPointer(rebasing: text[runStart..<index]))
                runStart = index + 1
                escape(byte)
            }
            bytes(UnsafeBufferPointer(rebasing: text[runStart...]))
            self.byte(UInt8(ascii: "\""))
        }
    }

    private mutating func escape(_ byte: UInt8) {
        let escaped: StaticString
        switch byte {
        case UInt8(ascii: "\""): escaped = #"\""#
        case UInt8(ascii: "\\"): escaped = #"\\"#
        case 0x0a: escaped = #"\n"#
        case 0x0d: escaped = #"\r"#
        case 0x09: escaped = #"\t"#
        case 0x08: escaped = #"\b"#
        case 0x0c: escaped = #"\f"#
        default:
            let hex: StaticString = "0123456789abcdef"
            let prefix: StaticString = #"\u00"#
            bytes(UnsafeBufferPointer(start: prefix.utf8Start, count: 4))
            self.byte(hex.utf8Start[Int(byte >> 4)])
            self.byte(hex.utf8Start[Int(byte & 0xf)])
            return
        }
        bytes(UnsafeBufferPointer(start: escaped.utf8Start, count: escaped.utf8CodeUnitCount))
    }
}

extension EventMessage: DirectJSONEncodable {
    /// Transfer events are not on the wake path's hot loop, and are nested: JSONEncoder's.
    public var encodesDirectly: Bool { transfers == nil }

    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        if let bytesAvailable { json.field("bytesAvailable", bytesAvailable) }
        if let connectionsWaiting { json.field("connectionsWaiting", connectionsWaiting) }
        json.field("event", event)
        json.field("kind", kind.rawValue)
        if let peerClosed { json.field("peerClosed", peerClosed) }
        json.field("reason", reason)
        if let socket { json.field("socket", socket) }
        json.field("state", state.rawValue)
        json.closeObject()
    }
}

extension TransitionRecord: DirectJSONEncodable {
    public func writeJSON(to json: inout JSONWriter) {
        json.openObject()
        json.field("app", app)
        json.field("from", from.rawValue)
        json.field("reason", reason)
        json.field("time", time)
        json.field("to", to.rawValue)
        json.closeObject()
    }
}

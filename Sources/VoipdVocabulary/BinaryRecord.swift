/// Bytes of a fixed, versioned record layout, written by one voipd and read by the next
/// (an in-place upgrade's held sockets): integers little-endian at their full width,
/// strings as a 32-bit length and UTF-8, optionals behind a presence byte. No keys and no
/// per-value objects, so that a record costs about what copying its fields costs.
///
/// The layout is the writer's and the reader's code together: whoever changes one changes
/// the other and the layout's version, and a round-trip test of every field holds them to
/// it.
public struct BinaryRecordWriter: Sendable {
    /// What has been written.
    public var bytes: [UInt8] { storage }
    @usableFromInline var storage: [UInt8] = []

    // The methods are inlinable: a call across the module boundary per field would cost
    // more than the field.
    @inlinable
    public init(capacity: Int = 0) {
        storage.reserveCapacity(capacity)
    }

    @inlinable
    public mutating func append(_ value: UInt8) {
        storage.append(value)
    }

    @inlinable
    public mutating func append(_ value: Bool) {
        storage.append(value ? 1 : 0)
    }

    @inlinable
    public mutating func append<Integer: FixedWidthInteger>(_ value: Integer) {
        withUnsafeBytes(of: value.littleEndian) { storage.append(contentsOf: $0) }
    }

    @inlinable
    public mutating func append(_ value: Double) {
        append(value.bitPattern)
    }

    @inlinable
    public mutating func append(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            append(UInt32(utf8.count))
            storage.append(contentsOf: utf8)
        }
    }

    /// A presence byte, then the value if there is one.
    @inlinable
    public mutating func appendOptional<Value>(_ value: Value?, _ write: (inout BinaryRecordWriter, Value) -> Void) {
        append(value != nil)
        if let value { write(&self, value) }
    }
}

/// Reads what ``BinaryRecordWriter`` wrote, checking every length against what is left: a
/// short or damaged record throws ``BinaryRecordError``, never reads past its end.
public struct BinaryRecordReader {
    @usableFromInline let bytes: [UInt8]
    /// How far it has read.
    public var offset: Int { position }
    @usableFromInline var position = 0

    @inlinable
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    @inlinable
    public var isAtEnd: Bool { position == bytes.count }

    @inlinable
    public mutating func readByte() throws(BinaryRecordError) -> UInt8 {
        guard position < bytes.count else { throw .truncated(at: position) }
        defer { position += 1 }
        return bytes[position]
    }

    @inlinable
    public mutating func readBool() throws(BinaryRecordError) -> Bool {
        switch try readByte() {
        case 0: return false
        case 1: return true
        case let other: throw .invalid("a boolean of \(other)", at: position - 1)
        }
    }

    @inlinable
    public mutating func read<Integer: FixedWidthInteger>(_: Integer.Type) throws(BinaryRecordError) -> Integer {
        let size = MemoryLayout<Integer>.size
        guard bytes.count - position >= size else { throw .truncated(at: position) }
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: position, as: Integer.self) }
        position += size
        return Integer(littleEndian: value)
    }

    @inlinable
    public mutating func readDouble() throws(BinaryRecordError) -> Double {
        Double(bitPattern: try read(UInt64.self))
    }

    /// A string, which must be valid UTF-8.
    @inlinable
    public mutating func readString() throws(BinaryRecordError) -> String {
        let start = position
        let length = Int(try read(UInt32.self))
        guard bytes.count - position >= length else { throw .truncated(at: start) }
        let string = bytes.withUnsafeBufferPointer { String(validating: UnsafeBufferPointer(rebasing: $0[position..<position + length]), as: UTF8.self) }
        guard let string else { throw .invalid("a string that is not UTF-8", at: start) }
        position += length
        return string
    }

    /// What ``BinaryRecordWriter/appendOptional(_:_:)`` wrote.
    @inlinable
    public mutating func readOptional<Value>(_ read: (inout BinaryRecordReader) throws(BinaryRecordError) -> Value) throws(BinaryRecordError) -> Value? {
        try readBool() ? try read(&self) : nil
    }
}

/// Bytes that are not a record of the layout expected.
public enum BinaryRecordError: Error, Equatable, CustomStringConvertible {
    case truncated(at: Int)
    case invalid(String, at: Int)

    public var description: String {
        switch self {
        case .truncated(let offset): return "the record ends early (at byte \(offset))"
        case .invalid(let what, let position): return "\(what) at byte \(position)"
        }
    }
}

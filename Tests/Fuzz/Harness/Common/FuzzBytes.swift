/// The fuzzer's input read as a stream of choices. Reading past the end gives zeros, so every
/// input, however short, is a complete run.
struct FuzzBytes {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func byte() -> UInt8 {
        guard offset < bytes.count else { return 0 }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A little-endian u16.
    mutating func uint16() -> UInt16 { UInt16(byte()) | UInt16(byte()) << 8 }

    /// One of `choices`.
    mutating func pick<T>(_ choices: [T]) -> T { choices[Int(byte()) % choices.count] }
}

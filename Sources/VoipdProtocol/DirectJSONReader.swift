/// A body decoded without Foundation's `JSONDecoder` when it is in the plain form every
/// client writes, because `JSONDecoder` costs 2 µs for a two-field request and 8 µs for a
/// reply holding a socket's status (`voipd-bench codec`; docs/BENCHMARKS.md). `nil` means
/// "not that form" (escapes, non-ASCII that is not valid UTF-8, exotic numbers, unknown or
/// repeated keys, a value of the wrong type…), never "invalid": ``WireCodec`` then decodes
/// the body with `JSONDecoder`, which accepts or refuses it and says why. So a body either
/// decodes here to exactly what `JSONDecoder` makes of it, or is left to `JSONDecoder`
/// (tests and the fuzz target hold the two to that).
///
/// Public so that `WireCodec.decode` can be called for such a type without a run-time cast;
/// only this module reads with a ``DirectJSONReader``.
public protocol DirectJSONDecodable: Decodable {
    init?(directJSON reader: inout DirectJSONReader)
}

/// Reads JSON in a strict subset: objects of known keys, strings without escapes, integers
/// without fraction or exponent, plain decimal numbers, booleans, null; whitespace anywhere
/// JSON allows it. Every read returns nil (and the reader is done) at anything else. What
/// generic bodies (`Reply`) call is inlinable, so that they are specialised where they are read.
public struct DirectJSONReader {
    @usableFromInline let bytes: UnsafeBufferPointer<UInt8>
    @usableFromInline var index = 0

    @inlinable
    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Decodes a whole body (nothing but whitespace after the value), or nil.
    @inlinable
    static func decode<T: DirectJSONDecodable>(_ type: T.Type, from body: ArraySlice<UInt8>) -> T? {
        body.withUnsafeBufferPointer { buffer in
            var reader = DirectJSONReader(buffer)
            guard let value = T(directJSON: &reader) else { return nil }
            reader.skipSpace()
            return reader.index == buffer.count ? value : nil
        }
    }

    @usableFromInline
    mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0a, 0x0d: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` (after whitespace) if it is next.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Consumes a literal such as `true` if it is next.
    private mutating func take(_ word: StaticString) -> Bool {
        skipSpace()
        return word.withUTF8Buffer { word in
            guard bytes.count - index >= word.count, zip(bytes[index..<index + word.count], word).allSatisfy({ $0 == $1 }) else {
                return false
            }
            index += word.count
            return true
        }
    }

    /// Reads an object: `field` is called with the index in `keys` of each known key, the
    /// reader at its value; it reads the value and returns false if it cannot. The values of
    /// unknown keys are skipped (read and dropped, as JSONDecoder ignores them); a repeated known
    /// key, or anything but an object, is false.
    @usableFromInline
    mutating func object(keys: [StaticString], _ field: (Int, inout DirectJSONReader) -> Bool) -> Bool {
        guard depth < Self.maximumDepth, take(UInt8(ascii: "{")) else { return false }
        depth += 1
        defer { depth -= 1 }
        if take(UInt8(ascii: "}")) { return true }
        var seen: UInt64 = 0
        repeat {
            guard let key = rawString(), take(UInt8(ascii: ":")) else { return false }
            if let found = Self.index(of: key, in: keys) {
                guard seen & (1 << found) == 0, field(found, &self) else { return false }
                seen |= 1 << found
            } else {
                guard Self.validString(key) != nil, skipValue() else { return false }
            }
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}"))
    }

    /// The index of `key` in `keys`: lengths first (most keys differ in length, and no byte
    /// of them is looked at), then the bytes.
    @usableFromInline
    static func index(of key: UnsafeBufferPointer<UInt8>, in keys: [StaticString]) -> Int? {
        search: for index in keys.indices {
            let name = keys[index]
            guard name.utf8CodeUnitCount == key.count else { continue }
            let bytes = name.utf8Start
            for at in 0..<key.count where bytes[at] != key[at] { continue search }
            return index
        }
        return nil
    }

    /// Reads an object whose one known key (`keys` holds it alone) has the value `value`
    /// reads: nil when it is not such an object, or the key is missing.
    mutating func oneKeyObject<T>(keys: [StaticString], _ value: (inout DirectJSONReader) -> T?) -> T? {
        var result: T?
        guard object(keys: keys, { _, reader in
            result = value(&reader)
            return result != nil
        }) else { return nil }
        return result
    }

    /// Reads an object whose two known keys (`keys` holds them, in this order) have the
    /// values `first` and `second` read: nil when it is not such an object, or a key is
    /// missing.
    mutating func twoKeyObject<First, Second>(keys: [StaticString], _ first: (inout DirectJSONReader) -> First?,
                                              _ second: (inout DirectJSONReader) -> Second?) -> (First, Second)? {
        var values: (First?, Second?)
        guard object(keys: keys, { key, reader in
            if key == 0 {
                values.0 = first(&reader)
                return values.0 != nil
            }
            values.1 = second(&reader)
            return values.1 != nil
        }), let one = values.0, let two = values.1 else { return nil }
        return (one, two)
    }

    /// Reads an array whose every element `element` reads: nil when it is not such an array.
    mutating func array<T>(_ element: (inout DirectJSONReader) -> T?) -> [T]? {
        guard depth < Self.maximumDepth, take(UInt8(ascii: "[")) else { return nil }
        depth += 1
        defer { depth -= 1 }
        var values: [T] = []
        if take(UInt8(ascii: "]")) { return values }
        repeat {
            guard let value = element(&self) else { return nil }
            values.append(value)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? values : nil
    }

    private static let maximumDepth = 32
    @usableFromInline var depth = 0

    /// Reads any value of the subset and drops it.
    private mutating func skipValue() -> Bool {
        skipSpace()
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""): return string() != nil
        case UInt8(ascii: "{"): return object(keys: []) { _, _ in false }
        case UInt8(ascii: "["):
            guard depth < Self.maximumDepth else { return false }
            depth += 1
            defer { depth -= 1 }
            index += 1
            if take(UInt8(ascii: "]")) { return true }
            repeat {
                guard skipValue() else { return false }
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]"))
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return bool() != nil
        case UInt8(ascii: "n"): return null()
        default: return double() != nil
        }
    }

    /// The bytes of a string without escapes or control characters.
    private mutating func rawString() -> UnsafeBufferPointer<UInt8>? {
        guard take(UInt8(ascii: "\"")), let base = bytes.baseAddress else { return nil }
        let start = index
        let end = bytes.count
        var at = start
        while at < end {
            let byte = base[at]
            if byte == UInt8(ascii: "\"") {
                index = at + 1
                return UnsafeBufferPointer(start: base + start, count: at - start)
            }
            guard byte >= 0x20, byte != UInt8(ascii: "\\") else {
                index = at
                return nil
            }
            at += 1
        }
        index = at
        return nil
    }

    mutating func string() -> String? {
        guard let raw = rawString() else { return nil }
        // Invalid UTF-8 is JSONDecoder's to refuse.
        return Self.validString(raw)
    }

    /// The string of UTF-8 bytes, or nil if they are not valid UTF-8. ASCII, what names and
    /// kinds are, is valid as it is: `String(validating:as:)` is generic in the standard
    /// library and not specialised, and its run-time look-ups cost more than the check.
    private static func validString(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    @usableFromInline
    mutating func bool() -> Bool? {
        if take("true") { return true }
        if take("false") { return false }
        return nil
    }

    /// Whether `null` is next (consumed if so).
    @usableFromInline
    mutating func null() -> Bool { take("null") }

    /// An integer in `T`'s range, written without fraction or exponent.
    @inlinable
    mutating func integer<T: FixedWidthInteger>(_: T.Type = T.self) -> T? {
        skipSpace()
        let negative = index < bytes.count && bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let start = index
        var magnitude: UInt64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
            index += 1
        }
        let count = index - start
        // No digits, a leading zero, or a fraction or exponent following: not this form.
        guard count > 0, count == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            return nil
        }
        if negative {
            guard T.isSigned, magnitude != 0, magnitude - 1 <= UInt64(T.max) else { return nil }
            return T(truncatingIfNeeded: 0 &- magnitude)
        }
        return T(exactly: magnitude)
    }

    /// A number in JSON's grammar (`-? int frac? exp?`), as Double reads it.
    mutating func double() -> Double? {
        skipSpace()
        let start = index
        func digits() -> Int {
            let first = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            return index - first
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0, integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        if let exact = Self.exactDouble(UnsafeBufferPointer(rebasing: bytes[start..<index])) { return exact }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)),
              value.isFinite else { return nil }
        return value
    }

    /// A number of JSON's grammar read without `strtod` when it can be read exactly:
    /// one whose digits make an integer of at most 2^53 and whose power of ten is at most 22
    /// either way. Both are then exact doubles, and one
    /// multiplication or division rounds correctly (Clinger's fast path), as `strtod` does.
    /// Nil for any other number (then `strtod` reads it). A reply's times (a socket's
    /// `registeredAt`) have 16 or 17 digits; through a String and `strtod` reading one
    /// cost a fifth of reading the whole reply.
    static func exactDouble(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        var at = 0
        let negative = text.first == UInt8(ascii: "-")
        if negative { at += 1 }
        var mantissa: UInt64 = 0
        var digits = 0
        var exponent = 0
        var fraction = false
        while at < text.count {
            let byte = text[at]
            if byte == UInt8(ascii: ".") {
                fraction = true
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                // Leading zeros count for nothing; 19 digits always fit in 64 bits.
                if mantissa != 0 || byte != UInt8(ascii: "0") { digits += 1 }
                guard digits <= 19 else { return nil }
                mantissa = mantissa * 10 + UInt64(byte - UInt8(ascii: "0"))
                if fraction { exponent -= 1 }
            } else {
                break
            }
            at += 1
        }
        if at < text.count {
            // An exponent: [eE][+-]?digits.
            at += 1
            var exponentNegative = false
            if at < text.count && (text[at] == UInt8(ascii: "+") || text[at] == UInt8(ascii: "-")) {
                exponentNegative = text[at] == UInt8(ascii: "-")
                at += 1
            }
            var written = 0
            while at < text.count {
                written = written * 10 + Int(text[at] - UInt8(ascii: "0"))
                guard written < 1000 else { return nil }
                at += 1
            }
            exponent += exponentNegative ? -written : written
        }
        guard mantissa <= 1 << 53, exponent >= -22, exponent <= 22 else { return nil }
        var value = Double(mantissa)
        if exponent < 0 {
            value /= exactPowersOfTen[-exponent]
        } else {
            value *= exactPowersOfTen[exponent]
        }
        return negative ? -value : value
    }

    /// 10^0 … 10^22: every one an exact double.
    private static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// A string that is one of `T`'s raw values.
    mutating func rawValue<T: RawRepresentable<String>>(_: T.Type = T.self) -> T? {
        string().flatMap(T.init(rawValue:))
    }

    /// A value that may be `null`: `.some(nil)` for null, `.some(value)`, or nil when neither.
    @inlinable
    mutating func optional<T>(_ read: (inout DirectJSONReader) -> T?) -> T?? {
        if null() { return .some(nil) }
        return read(&self).map { .some($0) }
    }
}

/// A key pressed in the live view, read from the terminal's bytes.
enum TopKey: Equatable {
    case up, down, pageUp, pageDown, home, end
    /// ^L: draw the whole screen again.
    case redraw
    case character(Character)

    /// The keys in what one read returned. Cursor keys come in either of the forms a
    /// terminal sends (`ESC [ A`, or `ESC O A` in application mode); an escape sequence
    /// not listed here, or cut short, is skipped.
    static func decode(_ bytes: [UInt8]) -> [TopKey] {
        var keys: [TopKey] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case 0x1B:
                // The sequence: ESC, then `[` or `O`, parameters, and a final byte (@ to ~).
                guard index < bytes.count, bytes[index] == UInt8(ascii: "[") || bytes[index] == UInt8(ascii: "O") else { continue }
                var end = index + 1
                while end < bytes.count, !(0x40...0x7E).contains(bytes[end]) { end += 1 }
                guard end < bytes.count else { return keys }
                let sequence = String(decoding: bytes[index...end], as: UTF8.self)
                index = end + 1
                let known: [String: TopKey] = [
                    "[A": .up, "OA": .up, "[B": .down, "OB": .down, "[5~": .pageUp, "[6~": .pageDown,
                    "[H": .home, "OH": .home, "[1~": .home, "[7~": .home, "[F": .end, "OF": .end, "[4~": .end, "[8~": .end,
                ]
                if let key = known[sequence] { keys.append(key) }
            case 0x0C: keys.append(.redraw)
            case 0x20...0x7E: keys.append(.character(Character(Unicode.Scalar(byte))))
            default: continue
            }
        }
        return keys
    }
}

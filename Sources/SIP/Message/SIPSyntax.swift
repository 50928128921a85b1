/// Character classes and splitting rules shared by the header value parsers.
enum SIPSyntax {
    /// RFC 3261 `token` characters: header names, methods, parameter names.
    static func isToken(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "-.!%*_+`'~".utf8.contains(byte)
        }
    }

    /// Splits `text` at every `separator` that is outside double quotes and angle brackets,
    /// trimming blanks around each piece. Used for comma-joined header values and `;` params.
    static func split(_ text: some StringProtocol, at separator: Character) -> [Substring] {
        let text = Substring(text)
        var pieces: [Substring] = []
        var start = text.startIndex
        var inQuotes = false
        var inBrackets = false
        var escaped = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                escaped = false
            } else if inQuotes {
                if character == "\\" { escaped = true } else if character == "\"" { inQuotes = false }
            } else if character == "\"" {
                inQuotes = true
            } else if character == "<" {
                inBrackets = true
            } else if character == ">" {
                inBrackets = false
            } else if character == separator && !inBrackets {
                pieces.append(trimmed(text[start..<index]))
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        pieces.append(trimmed(text[start...]))
        return pieces
    }

    static func trimmed(_ text: Substring) -> Substring {
        var result = text
        while let first = result.first, first == " " || first == "\t" { result = result.dropFirst() }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }

    static func trimmed(_ text: String) -> String { String(trimmed(Substring(text))) }
}

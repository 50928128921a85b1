/// Why bytes could not be read as a SIP message or a part of one.
///
/// Every parser in this module reports malformed input with one of these cases instead of
/// trapping, whatever the input.
public enum SIPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// There were no bytes (or only line breaks) where a message was expected.
    case empty
    /// The header section is not followed by an empty line.
    case missingHeaderTerminator
    /// The header section is not valid UTF-8 or holds control characters.
    case invalidEncoding
    /// The first line is neither `METHOD URI SIP/2.0` nor `SIP/2.0 CODE REASON`.
    case invalidStartLine(String)
    /// A header line has no colon or an invalid name.
    case invalidHeaderLine(String)
    /// A header the message cannot do without is absent.
    case missingHeader(String)
    /// A header is present but its value cannot be read.
    case invalidHeaderValue(name: String, value: String)
    /// The body is shorter than Content-Length says.
    case truncatedBody(expected: Int, actual: Int)
    /// More bytes follow the body than Content-Length says.
    case trailingBytes(Int)
    /// A URI that is not `sip:` or `sips:` or is malformed.
    case invalidURI(String)
    /// The message is larger than the limit the reader was given.
    case messageTooLarge(limit: Int)

    public var description: String {
        switch self {
        case .empty: "empty message"
        case .missingHeaderTerminator: "header section not terminated by an empty line"
        case .invalidEncoding: "header section is not valid UTF-8 text"
        case .invalidStartLine(let line): "invalid start line: \(Self.excerpt(line))"
        case .invalidHeaderLine(let line): "invalid header line: \(Self.excerpt(line))"
        case .missingHeader(let name): "missing \(name) header"
        case .invalidHeaderValue(let name, let value): "invalid \(name) header: \(Self.excerpt(value))"
        case .truncatedBody(let expected, let actual): "body truncated: Content-Length \(expected), \(actual) bytes present"
        case .trailingBytes(let count): "\(count) bytes after the body"
        case .invalidURI(let uri): "invalid SIP URI: \(Self.excerpt(uri))"
        case .messageTooLarge(let limit): "message larger than \(limit) bytes"
        }
    }

    // Error text ends up in logs; a hostile peer must not be able to fill them.
    private static func excerpt(_ text: String) -> String {
        let limit = 80
        let quoted = text.count > limit ? String(text.prefix(limit)) + "…" : text
        return "\"\(quoted)\""
    }
}

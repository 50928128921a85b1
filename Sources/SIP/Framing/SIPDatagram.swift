/// Reads the message in one UDP datagram (RFC 3261 18.3): a datagram holds exactly one
/// message, so nothing carries over from one to the next and a malformed one costs only
/// itself.
public enum SIPDatagram {
    /// The message in `bytes`, or nil for a datagram of line breaks only (a keep-alive, or
    /// padding: RFC 3261 7.5 lets line breaks precede a message).
    ///
    /// The body is what Content-Length says; bytes after it are discarded, and a datagram
    /// shorter than it says is refused (``SIPParseError/truncatedBody(expected:actual:)``).
    /// Without Content-Length the body runs to the end of the datagram.
    public static func message(in bytes: some Collection<UInt8>, maximumSize: Int = 65_535) throws(SIPParseError) -> SIPMessage? {
        guard bytes.count <= maximumSize else { throw .messageTooLarge(limit: maximumSize) }
        let bytes = Array(bytes.drop { $0 == 0x0D || $0 == 0x0A })
        guard !bytes.isEmpty else { return nil }
        guard let headerEnd = SIPMessageParser.headerEnd(in: bytes, from: 0) else { throw .missingHeaderTerminator }
        let head = try SIPMessageParser.validatedHead(bytes[..<(headerEnd - 4)])
        var body = Array(bytes[headerEnd...])
        if let length = head.contentLength {
            guard body.count >= length else { throw .truncatedBody(expected: length, actual: body.count) }
            body.removeLast(body.count - length)
        }
        return SIPMessage(startLine: head.startLine, headers: head.headers, body: body)
    }
}

/// Reads the header section of a message and checks the headers every message needs.
enum SIPMessageParser {
    /// A validated header section and the body length it announces.
    struct Head {
        var startLine: SIPMessage.StartLine
        var headers: SIPHeaders
        var contentLength: Int?
    }

    /// Reads and validates a header section (without the empty line that ends it).
    static func validatedHead(_ bytes: ArraySlice<UInt8>) throws(SIPParseError) -> Head {
        let (startLine, headers) = try parseHead(bytes)
        try validate(startLine, headers)
        return Head(startLine: startLine, headers: headers, contentLength: try contentLength(headers))
    }

    /// Reads a start line and header lines (without the empty line that ends them).
    static func parseHead(_ bytes: ArraySlice<UInt8>) throws(SIPParseError) -> (SIPMessage.StartLine, SIPHeaders) {
        // Bare CR, LF and other control characters are refused here, so no header value can
        // smuggle a line break into a message this module writes out again.
        guard bytes.allSatisfy({ $0 >= 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }) else { throw .invalidEncoding }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidEncoding }
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard lines.allSatisfy({ !$0.contains("\r") && !$0.contains("\n") }) else { throw .invalidEncoding }
        guard let first = lines.first, !first.isEmpty else { throw .empty }
        lines.removeFirst()
        let startLine = try parseStartLine(first)
        return (startLine, try parseHeaderLines(lines))
    }

    static func parseStartLine(_ line: Substring) throws(SIPParseError) -> SIPMessage.StartLine {
        let invalid = SIPParseError.invalidStartLine(String(line))
        if line.hasPrefix("SIP/") {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0] == "SIP/2.0", parts[1].count == 3,
                parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let code = Int(parts[1]), (100...699).contains(code)
            else { throw invalid }
            return .response(statusCode: code, reasonPhrase: parts.count > 2 ? String(parts[2]) : "")
        }
        let parts = line.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, SIPSyntax.isToken(parts[0]), parts[2] == "SIP/2.0" else { throw invalid }
        return .request(method: SIPMethod(rawValue: String(parts[0])), uri: try SIPURI(parsing: parts[1]))
    }

    static func parseHeaderLines(_ lines: [Substring]) throws(SIPParseError) -> SIPHeaders {
        var unfolded: [String] = []
        for line in lines {
            if line.first == " " || line.first == "\t" {
                // A continuation line (RFC 3261 7.3.1) joins the previous one with a blank.
                guard let last = unfolded.popLast() else { throw .invalidHeaderLine(String(line)) }
                unfolded.append(last + " " + SIPSyntax.trimmed(line))
            } else {
                unfolded.append(String(line))
            }
        }
        var headers = SIPHeaders()
        for line in unfolded {
            guard let colon = line.firstIndex(of: ":") else { throw .invalidHeaderLine(line) }
            let name = SIPSyntax.trimmed(line[..<colon])
            guard SIPSyntax.isToken(name) else { throw .invalidHeaderLine(line) }
            headers.add(String(name), String(SIPSyntax.trimmed(line[line.index(after: colon)...])))
        }
        return headers
    }

    /// Checks the headers that routing and matching rely on (RFC 3261 8.1.1), so code that
    /// receives a parsed message can read them without failing.
    static func validate(_ startLine: SIPMessage.StartLine, _ headers: SIPHeaders) throws(SIPParseError) {
        for name in ["Call-ID", "CSeq", "From", "To"] where (headers[name] ?? "").isEmpty {
            throw .missingHeader(name)
        }
        let vias = headers.values("Via")
        guard !vias.isEmpty else { throw .missingHeader("Via") }
        for via in vias { _ = try SIPVia(parsing: via) }
        _ = try SIPNameAddress(parsing: headers["From"] ?? "")
        _ = try SIPNameAddress(parsing: headers["To"] ?? "")
        let cseq = try SIPCSeq(parsing: headers["CSeq"] ?? "")
        if case .request(let method, _) = startLine, cseq.method != method {
            throw .invalidHeaderValue(name: "CSeq", value: cseq.description)
        }
        if let maxForwards = headers["Max-Forwards"], UInt8(maxForwards) == nil {
            throw .invalidHeaderValue(name: "Max-Forwards", value: maxForwards)
        }
    }

    /// The Content-Length value; nil when absent.
    static func contentLength(_ headers: SIPHeaders) throws(SIPParseError) -> Int? {
        let lines = headers.lines("Content-Length")
        guard let text = lines.first else { return nil }
        guard lines.allSatisfy({ $0 == text }), !text.isEmpty, text.count <= 9,
            text.allSatisfy({ $0.isASCII && $0.isNumber }), let length = Int(text)
        else { throw .invalidHeaderValue(name: "Content-Length", value: lines.joined(separator: ", ")) }
        return length
    }

    /// The index just past the first `\r\n\r\n` at or after `start`, if there is one.
    static func headerEnd(in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= 4 else { return nil }
        var index = start
        while index + 4 <= bytes.count {
            if bytes[index] == 0x0D, bytes[index + 1] == 0x0A, bytes[index + 2] == 0x0D, bytes[index + 3] == 0x0A {
                return index + 4
            }
            index += 1
        }
        return nil
    }
}

extension SIPMessage {
    /// Reads one complete message. The body is everything after the header section and must
    /// be exactly as long as Content-Length says (when present).
    ///
    /// - Throws: ``SIPParseError`` for anything malformed, truncated or larger than `maximumSize`.
    public init(parsing bytes: some Collection<UInt8>, maximumSize: Int = 65_535) throws(SIPParseError) {
        guard bytes.count <= maximumSize else { throw .messageTooLarge(limit: maximumSize) }
        let bytes = Array(bytes)
        guard !bytes.isEmpty else { throw .empty }
        guard let headerEnd = SIPMessageParser.headerEnd(in: bytes, from: 0) else { throw .missingHeaderTerminator }
        let head = try SIPMessageParser.validatedHead(bytes[..<(headerEnd - 4)])
        let body = Array(bytes[headerEnd...])
        if let length = head.contentLength {
            if body.count < length { throw .truncatedBody(expected: length, actual: body.count) }
            if body.count > length { throw .trailingBytes(body.count - length) }
        }
        self.init(startLine: head.startLine, headers: head.headers, body: body)
    }
}

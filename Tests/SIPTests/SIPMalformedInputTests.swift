import SIP
import Testing

@Suite struct SIPMalformedInputTests {
    private static let validHeaders = [
        "Via: SIP/2.0/TCP h;branch=z9hG4bK1", "From: <sip:a@x>;tag=1", "To: <sip:b@x>", "Call-ID: c", "CSeq: 1 OPTIONS",
    ]

    private func parse(_ lines: [String], body: String = "") throws(SIPParseError) -> SIPMessage {
        try SIPMessage(parsing: Fixtures.bytes(lines, body: body))
    }

    @Test func rejectsEmptyAndHeaderlessInput() {
        #expect(throws: SIPParseError.empty) { try SIPMessage(parsing: [UInt8]()) }
        #expect(throws: SIPParseError.missingHeaderTerminator) { try SIPMessage(parsing: Array("OPTIONS sip:x SIP/2.0\r\n".utf8)) }
        #expect(throws: SIPParseError.empty) { try SIPMessage(parsing: Array("\r\n\r\n".utf8)) }
    }

    @Test(arguments: [
        "OPTIONS sip:x SIP/1.0", "OPTIONS sip:x", "OPTIONS  sip:x SIP/2.0", "OPT IONS sip:x SIP/2.0", "SIP/2.0 99 Low",
        "SIP/2.0 700 High", "SIP/2.0 2OO OK", "SIP/1.1 200 OK", "GET / HTTP/1.1",
    ])
    func rejectsBadStartLines(line: String) {
        #expect(throws: SIPParseError.self) { try parse([line] + Self.validHeaders) }
    }

    @Test func rejectsBadHeaderLines() {
        #expect(throws: SIPParseError.invalidHeaderLine("No colon here")) {
            try parse(["OPTIONS sip:x SIP/2.0", "No colon here"] + Self.validHeaders)
        }
        #expect(throws: SIPParseError.invalidHeaderLine("Bad Name: x")) {
            try parse(["OPTIONS sip:x SIP/2.0", "Bad Name: x"] + Self.validHeaders)
        }
        #expect(throws: SIPParseError.invalidHeaderLine(" folded first")) {
            try parse(["OPTIONS sip:x SIP/2.0", " folded first"] + Self.validHeaders)
        }
    }

    @Test(arguments: ["Via", "From", "To", "Call-ID", "CSeq"])
    func rejectsAMissingMandatoryHeader(name: String) {
        let lines = ["OPTIONS sip:x SIP/2.0"] + Self.validHeaders.filter { !$0.hasPrefix(name + ":") }
        #expect(throws: SIPParseError.missingHeader(name)) { try parse(lines) }
    }

    @Test func rejectsUnreadableMandatoryHeaders() {
        let start = "OPTIONS sip:x SIP/2.0"
        let cases: [(String, String)] = [
            ("Via", "Via: nonsense"), ("From", "From: <sip:a@x"), ("CSeq", "CSeq: 1 INVITE"), ("CSeq", "CSeq: one OPTIONS"),
            ("Max-Forwards", "Max-Forwards: 300"), ("Content-Length", "Content-Length: -1"), ("Content-Length", "Content-Length: 1x"),
        ]
        for (name, line) in cases {
            let lines = [start] + Self.validHeaders.filter { !$0.hasPrefix(name + ":") } + [line]
            #expect(throws: SIPParseError.self, "\(line)") { try parse(lines) }
        }
    }

    @Test func rejectsConflictingContentLengths() {
        let lines = ["OPTIONS sip:x SIP/2.0"] + Self.validHeaders + ["Content-Length: 0", "l: 3"]
        #expect(throws: SIPParseError.invalidHeaderValue(name: "Content-Length", value: "0, 3")) { try parse(lines, body: "abc") }
    }

    @Test func rejectsTruncatedAndOverlongBodies() {
        let lines = ["OPTIONS sip:x SIP/2.0"] + Self.validHeaders + ["Content-Length: 10"]
        #expect(throws: SIPParseError.truncatedBody(expected: 10, actual: 3)) { try parse(lines, body: "abc") }
        #expect(throws: SIPParseError.trailingBytes(2)) { try parse(lines, body: "0123456789xy") }
    }

    @Test func rejectsOversizedInput() {
        let lines = ["OPTIONS sip:x SIP/2.0"] + Self.validHeaders + ["X-Padding: " + String(repeating: "a", count: 70_000)]
        #expect(throws: SIPParseError.messageTooLarge(limit: 65_535)) { try parse(lines) }
        #expect(throws: SIPParseError.messageTooLarge(limit: 100)) {
            try SIPMessage(parsing: Fixtures.bytes(["OPTIONS sip:x SIP/2.0"] + Self.validHeaders), maximumSize: 100)
        }
    }

    @Test func rejectsInvalidEncodingAndControlCharacters() {
        var bytes = Fixtures.bytes(["OPTIONS sip:x SIP/2.0"] + Self.validHeaders + ["Subject: x"])
        let subject = bytes.count - "x\r\n\r\n".utf8.count
        bytes[subject] = 0xFF
        #expect(throws: SIPParseError.invalidEncoding) { try SIPMessage(parsing: bytes) }
        bytes[subject] = 0x00
        #expect(throws: SIPParseError.invalidEncoding) { try SIPMessage(parsing: bytes) }
        #expect(throws: SIPParseError.invalidEncoding) {
            try parse(["OPTIONS sip:x SIP/2.0"] + Self.validHeaders + ["Subject: bare\nnewline"])
        }
    }

    @Test func errorsSayWhatIsWrong() {
        #expect(SIPParseError.missingHeader("Call-ID").description == "missing Call-ID header")
        let long = SIPParseError.invalidStartLine(String(repeating: "x", count: 500)).description
        #expect(long.count < 150)
    }

    /// Every prefix of a valid message, and thousands of random mutations of it, either parse
    /// or throw: nothing traps.
    @Test func neverCrashesOnTruncatedOrMutatedInput() throws {
        let valid = try Fixtures.invite().serialized()
        for length in 0..<valid.count {
            #expect(throws: SIPParseError.self) { try SIPMessage(parsing: valid[..<length]) }
        }
        var generator = SeededGenerator(seed: 42)
        var parsed = 0
        for _ in 0..<3000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.remove(at: index)
                default: bytes.insert(Array(";:,<>\"\r\n @=".utf8).randomElement(using: &generator)!, at: index)
                }
            }
            if let message = try? SIPMessage(parsing: bytes) {
                parsed += 1
                _ = (message.vias, message.contacts, message.cseq, message.serialized())
            }
        }
        #expect(parsed > 0)
    }

    @Test func neverCrashesOnRandomBytes() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? SIPMessage(parsing: bytes + Array("\r\n\r\n".utf8))
            var framer = SIPStreamFramer(maximumMessageSize: 256)
            framer.append(bytes)
            while (try? framer.next()) != nil {}
        }
    }
}

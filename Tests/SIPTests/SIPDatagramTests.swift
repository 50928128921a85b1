import SIP
import Testing

/// One message per datagram (RFC 3261 18.3).
@Suite struct SIPDatagramTests {
    private let head = Fixtures.registerLines().filter { !$0.hasPrefix("Content-Length") }

    @Test func readsTheMessageInADatagramIgnoringLineBreaksBeforeIt() throws {
        let message = try #require(try SIPDatagram.message(in: Array("\r\n".utf8) + Fixtures.bytes(Fixtures.registerLines())))
        #expect(message.method == .register && message.body.isEmpty)
    }

    @Test func aDatagramOfLineBreaksIsAKeepAlive() throws {
        #expect(try SIPDatagram.message(in: Array("\r\n\r\n".utf8)) == nil)
    }

    @Test func bytesAfterTheBodyAreDiscardedAndAShortBodyIsRefused() throws {
        let longer = try #require(try SIPDatagram.message(in: Fixtures.bytes(head + ["Content-Length: 3"], body: "abcdef")))
        #expect(longer.body == Array("abc".utf8))
        #expect(throws: SIPParseError.truncatedBody(expected: 9, actual: 6)) {
            try SIPDatagram.message(in: Fixtures.bytes(head + ["Content-Length: 9"], body: "abcdef"))
        }
    }

    @Test func withoutContentLengthTheBodyRunsToTheEnd() throws {
        let message = try #require(try SIPDatagram.message(in: Fixtures.bytes(head, body: "abcdef")))
        #expect(message.body == Array("abcdef".utf8))
    }

    @Test func malformedAndOversizedDatagramsAreRefused() {
        #expect(throws: SIPParseError.self) { try SIPDatagram.message(in: Array("GET / HTTP/1.1\r\n\r\n".utf8)) }
        #expect(throws: SIPParseError.missingHeaderTerminator) { try SIPDatagram.message(in: Array("REGISTER sip:x SIP/2.0\r\n".utf8)) }
        #expect(throws: SIPParseError.messageTooLarge(limit: 100)) {
            try SIPDatagram.message(in: Fixtures.bytes(Fixtures.registerLines()), maximumSize: 100)
        }
    }

    @Test func noteSourceFillsRportAndReceivedAsRFC3581Says() throws {
        var message = try #require(try SIPDatagram.message(in: Fixtures.bytes(Fixtures.registerLines())))
        message.noteSource(try #require(SIPSocketAddress(numericHost: "127.0.0.1", port: 40_123)))
        #expect(message.topVia?.parameters["rport"] == "40123")
        #expect(message.topVia?.parameters["received"] == "127.0.0.1", "alice.invalid is not the source")
        #expect(message.vias.count == 1)
    }
}

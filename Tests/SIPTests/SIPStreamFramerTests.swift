import SIP
import Testing

@Suite struct SIPStreamFramerTests {
    private func messages(_ framer: inout SIPStreamFramer) throws -> [SIPStreamItem] {
        var items: [SIPStreamItem] = []
        while let item = try framer.next() { items.append(item) }
        return items
    }

    @Test func yieldsTwoMessagesFromOneChunk() throws {
        let invite = try Fixtures.invite()
        var framer = SIPStreamFramer()
        framer.append(invite.serialized() + invite.serialized())
        #expect(try messages(&framer) == [.message(invite), .message(invite)])
        #expect(framer.bufferedByteCount == 0)
    }

    @Test func assemblesAMessageArrivingByteByByte() throws {
        let invite = try Fixtures.invite()
        var framer = SIPStreamFramer()
        var items: [SIPStreamItem] = []
        for byte in invite.serialized() {
            framer.append([byte])
            items += try messages(&framer)
        }
        #expect(items == [.message(invite)])
    }

    @Test func reportsKeepAlivesBetweenMessages() throws {
        let invite = try Fixtures.invite()
        var framer = SIPStreamFramer()
        framer.append(Array("\r\n\r\n".utf8) + invite.serialized() + Array("\r\n".utf8))
        #expect(try messages(&framer) == [.keepAlivePing, .message(invite), .keepAlivePong])
    }

    @Test func waitsForTheRestOfASplitPing() throws {
        var framer = SIPStreamFramer()
        framer.append(Array("\r".utf8))
        #expect(try framer.next() == nil)
        framer.append(Array("\n\r".utf8))
        #expect(try framer.next() == nil)
        framer.append(Array("\n".utf8))
        #expect(try framer.next() == .keepAlivePing)
    }

    @Test func waitsForTheWholeBody() throws {
        let invite = try Fixtures.invite()
        let bytes = invite.serialized()
        var framer = SIPStreamFramer()
        framer.append(bytes.dropLast(5))
        #expect(try framer.next() == nil)
        framer.append(bytes.suffix(5))
        #expect(try framer.next() == .message(invite))
    }

    @Test func takesAMissingContentLengthAsAnEmptyBody() throws {
        var framer = SIPStreamFramer()
        framer.append(Fixtures.bytes(Array(Fixtures.inviteLines.dropLast())) + Fixtures.bytes(Fixtures.inviteLines, body: Fixtures.sdp))
        let items = try messages(&framer)
        #expect(items.count == 2)
        guard case .message(let first) = items.first else { return }
        #expect(first.body.isEmpty)
    }

    @Test func refusesAHeaderSectionThatNeverEnds() {
        var framer = SIPStreamFramer(maximumMessageSize: 1000)
        framer.append(Array(("OPTIONS sip:x SIP/2.0\r\nX: " + String(repeating: "a", count: 1200)).utf8))
        #expect(throws: SIPParseError.messageTooLarge(limit: 1000)) { try framer.next() }
    }

    @Test func refusesABodyLargerThanTheLimit() {
        var framer = SIPStreamFramer(maximumMessageSize: 1000)
        framer.append(Fixtures.bytes(Array(Fixtures.inviteLines.dropLast()) + ["Content-Length: 5000"]))
        #expect(throws: SIPParseError.messageTooLarge(limit: 1000)) { try framer.next() }
    }

    @Test func staysFailedAfterAMalformedMessage() throws {
        var framer = SIPStreamFramer()
        framer.append(Array("HELLO\r\n\r\n".utf8))
        #expect(throws: SIPParseError.invalidStartLine("HELLO")) { try framer.next() }
        framer.append(try Fixtures.invite().serialized())
        #expect(throws: SIPParseError.invalidStartLine("HELLO")) { try framer.next() }
    }

    @Test func refusesGarbageAfterACarriageReturn() {
        var framer = SIPStreamFramer()
        framer.append(Array("\rGARBAGE\r\n\r\n".utf8))
        #expect(throws: SIPParseError.self) { try framer.next() }
    }
}

import SIP
import Testing

@Suite struct SIPMessageParsingTests {
    @Test func readsARequestWithCompactFormsAndSeveralVias() throws {
        let invite = try Fixtures.invite()
        #expect(invite.method == .invite)
        #expect(invite.requestURI?.description == "sip:alice@alice.invalid;transport=tcp")
        #expect(invite.vias.map(\.branch) == ["z9hG4bKproxy1", "z9hG4bKproxy0", "z9hG4bKcaller"])
        #expect(invite.headers.lines("Via").count == 2)
        #expect(invite.callID == "call-1@bob.invalid")
        #expect(invite.cseq == SIPCSeq(number: 1, method: .invite))
        #expect(invite.fromTag == "bobtag")
        #expect(invite.from?.displayName == "Bob")
        #expect(invite.toTag == nil)
        #expect(invite.contact?.uri.parameters["alias"] == "127.0.0.1~40312~2")
        #expect(invite.recordRoutes.map(\.uri.description) == ["sip:127.0.0.1:5070;transport=tcp;lr"])
        #expect(invite.maxForwards == 69)
        #expect(invite.contentLength == Fixtures.sdp.utf8.count)
        #expect(invite.bodyText == Fixtures.sdp)
    }

    @Test func headerNamesAreCaseInsensitiveAndCompactFormsExpand() throws {
        let invite = try Fixtures.invite()
        #expect(invite.headers["CALL-ID"] == "call-1@bob.invalid")
        #expect(invite.headers["call-id"] == "call-1@bob.invalid")
        #expect(invite.headers["i"] == "call-1@bob.invalid")
        #expect(invite.headers["Content-Type"] == "application/sdp")
        #expect(invite.headers.fields.contains { $0.name == "From" })
    }

    @Test func readsAResponse() throws {
        let response = try Fixtures.message([
            "SIP/2.0 180 Ringing Now",
            "Via: SIP/2.0/TCP bob.invalid;branch=z9hG4bKcaller",
            "From: <sip:bob@x>;tag=1", "To: <sip:alice@x>;tag=2", "Call-ID: c", "CSeq: 1 INVITE",
            "Content-Length: 0",
        ])
        #expect(response.statusCode == 180)
        #expect(response.reasonPhrase == "Ringing Now")
        #expect(response.isRequest == false)
        #expect(response.toTag == "2")
    }

    @Test func unfoldsContinuationLines() throws {
        let message = try Fixtures.message([
            "OPTIONS sip:x SIP/2.0", "Via: SIP/2.0/TCP h;branch=z9hG4bK1", "From: <sip:a@x>;tag=1", "To: <sip:b@x>",
            "Call-ID: c", "CSeq: 2 OPTIONS", "Subject: first", "\tsecond",
        ])
        #expect(message.headers["Subject"] == "first second")
    }

    @Test func splitsCommaJoinedListsButNotOtherHeaders() throws {
        let message = try Fixtures.message([
            "OPTIONS sip:x SIP/2.0", "Via: SIP/2.0/TCP h;branch=z9hG4bK1", "From: <sip:a@x>;tag=1", "To: <sip:b@x>",
            "Call-ID: c", "CSeq: 2 OPTIONS",
            "Route: <sip:p1;lr>, \"A, B\" <sip:p2;lr>", "Route: <sip:p3;lr>",
            "Date: Sat, 13 Nov 2010 23:29:00 GMT",
        ])
        #expect(message.routes.map(\.uri.host) == ["p1", "p2", "p3"])
        #expect(message.routes[1].displayName == "A, B")
        #expect(message.headers.values("Date") == ["Sat, 13 Nov 2010 23:29:00 GMT"])
    }

    @Test func serializesAndReadsBackTheSameMessage() throws {
        let invite = try Fixtures.invite()
        let again = try SIPMessage(parsing: invite.serialized())
        #expect(again == invite)
    }

    @Test func serializationWritesTheActualContentLength() throws {
        var message = try Fixtures.invite()
        message.body = Array("x=1\r\n".utf8)
        let text = String(decoding: message.serialized(), as: UTF8.self)
        #expect(text.hasSuffix("Content-Length: 5\r\n\r\nx=1\r\n"))
        #expect(!text.contains("l: "))
    }

    @Test func aMessageWithoutContentLengthTakesTheRestAsBody() throws {
        let message = try Fixtures.message(Array(Fixtures.inviteLines.dropLast()), body: "abc")
        #expect(message.body == Array("abc".utf8))
    }

    @Test func proxyEditsKeepTheOtherLinesAsWritten() throws {
        var invite = try Fixtures.invite()
        invite.headers.addFirst("Via", "SIP/2.0/TCP 127.0.0.1:9;branch=z9hG4bKnew")
        #expect(invite.vias.first?.branch == "z9hG4bKnew")
        invite.headers.removeFirstValue("Via")
        invite.headers.removeFirstValue("Via")
        #expect(invite.headers.lines("Via") == [
            "SIP/2.0/TCP 10.0.0.9:5070;branch=z9hG4bKproxy0",
            "SIP/2.0/TCP bob.invalid;branch=z9hG4bKcaller;rport=40312;received=127.0.0.1",
        ])
    }
}

import SIP
import Testing

@Suite struct SIPHeaderValueTests {
    @Test(arguments: [
        ("sip:alice@127.0.0.1:5060;transport=tcp", "alice", "127.0.0.1", UInt16(5060)),
        ("sips:bob:secret@example.com", "bob", "example.com", nil),
        ("sip:127.0.0.1", nil, "127.0.0.1", nil),
        ("SIP:carol@[::1]:5070;lr", "carol", "[::1]", UInt16(5070)),
        ("sip:dave@alice.invalid;transport=tcp;alias=127.0.0.1~40312~2?subject=hi", "dave", "alice.invalid", nil),
    ] as [(String, String?, String, UInt16?)])
    func readsURIs(text: String, user: String?, host: String, port: UInt16?) throws {
        let uri = try SIPURI(parsing: text)
        #expect(uri.user == user)
        #expect(uri.host == host)
        #expect(uri.port == port)
    }

    @Test func uriKeepsItsParametersAndHeadersAsWritten() throws {
        let text = "sip:dave@alice.invalid;transport=tcp;alias=127.0.0.1~40312~2;lr?subject=hi"
        let uri = try SIPURI(parsing: text)
        #expect(uri.description == text)
        #expect(uri.parameters.contains("lr"))
        #expect(uri.parameters["LR"] == "")
        #expect(uri.parameters["transport"] == "tcp")
        #expect(uri.headers == "subject=hi")
        #expect(try SIPURI(parsing: "sips:bob:secret@example.com").password == "secret")
    }

    @Test(arguments: [
        "", "sip:", "tel:+123", "http://x", "sip:alice@", "sip:@host", "sip:host:70000", "sip:host:", "sip:host:5x",
        "sip:al ice@host", "sip:[::1", "sip:[zz]", "sip:ho<st", "sip:host;=x",
    ])
    func rejectsMalformedURIs(text: String) {
        #expect(throws: SIPParseError.invalidURI(text)) { try SIPURI(parsing: text) }
    }

    @Test func readsNameAddresses() throws {
        let quoted = try SIPNameAddress(parsing: #""Bob \"B\" Smith" <sip:bob@x;transport=tcp>;tag=abc;expires=30"#)
        #expect(quoted.displayName == #"Bob "B" Smith"#)
        #expect(quoted.uri.parameters["transport"] == "tcp")
        #expect(quoted.tag == "abc")
        #expect(quoted.parameters["expires"] == "30")

        let unquoted = try SIPNameAddress(parsing: "Alice <sip:alice@x>")
        #expect(unquoted.displayName == "Alice")

        // Without brackets the parameters belong to the header, not to the URI.
        let bare = try SIPNameAddress(parsing: "sip:carol@x;tag=9")
        #expect(bare.tag == "9")
        #expect(bare.uri.parameters.items.isEmpty)

        let quotedParameter = try SIPNameAddress(parsing: #"<sip:a@x>;received="sip:127.0.0.1:5;transport=TCP";expires=60"#)
        #expect(quotedParameter.parameters["received"] == #""sip:127.0.0.1:5;transport=TCP""#)
        #expect(quotedParameter.parameters["expires"] == "60")
        #expect(quotedParameter.description == #"<sip:a@x>;received="sip:127.0.0.1:5;transport=TCP";expires=60"#)
    }

    @Test(arguments: ["", "<sip:a@x", "\"unterminated <sip:a@x>", "\"Name\" sip:a@x", "<sip:a@x> junk", "<tel:1>"])
    func rejectsMalformedNameAddresses(text: String) {
        #expect(throws: SIPParseError.self) { try SIPNameAddress(parsing: text) }
    }

    @Test func readsVias() throws {
        let via = try SIPVia(parsing: "SIP / 2.0 / tcp 127.0.0.1:5070 ;branch=z9hG4bK1;rport=4;received=127.0.0.1")
        #expect(via.transport == "TCP")
        #expect(via.host == "127.0.0.1")
        #expect(via.port == 5070)
        #expect(via.branch == "z9hG4bK1")
        #expect(via.parameters["rport"] == "4")
        #expect(try SIPVia(parsing: "SIP/2.0/TCP bob.invalid;rport").parameters["rport"] == "")
    }

    @Test(arguments: ["", "SIP/2.0/TCP", "SIP/3.0/TCP host", "HTTP/2.0/TCP host", "SIP/2.0 host", "SIP/2.0/TCP host:99999"])
    func rejectsMalformedVias(text: String) {
        #expect(throws: SIPParseError.self) { try SIPVia(parsing: text) }
    }

    @Test func readsCSeq() throws {
        #expect(try SIPCSeq(parsing: "314159 INVITE") == SIPCSeq(number: 314_159, method: .invite))
        for bad in ["", "1", "INVITE", "-1 INVITE", "2147483648 INVITE", "1 IN VITE", "x1 ACK", "99999999999 ACK"] {
            #expect(throws: SIPParseError.self) { try SIPCSeq(parsing: bad) }
        }
    }

    @Test func parametersAreOrderedAndEditable() throws {
        var parameters = try SIPParameters(parsing: ";transport=tcp;lr;x=\"a;b\"")
        #expect(parameters.items.map(\.name) == ["transport", "lr", "x"])
        #expect(parameters["x"] == "\"a;b\"")
        parameters.set("expires", "30")
        parameters.remove("LR")
        #expect(parameters.description == ";transport=tcp;x=\"a;b\";expires=30")
    }
}

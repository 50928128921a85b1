import SIP

/// Sample messages for the unit tests, written the way peers on the wire write them.
enum Fixtures {
    /// Builds message bytes from header lines, CRLF-terminated, plus a body.
    static func bytes(_ lines: [String], body: String = "") -> [UInt8] {
        Array((lines.map { $0 + "\r\n" }.joined() + "\r\n" + body).utf8)
    }

    static func message(_ lines: [String], body: String = "") throws -> SIPMessage {
        try SIPMessage(parsing: bytes(lines, body: body))
    }

    static let sdp = "v=0\r\no=bob 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4002 RTP/AVP 0\r\n"

    /// An INVITE as a proxy at 127.0.0.1:5070 delivers it: two Vias (one comma-joined line
    /// and one repeated line), Record-Route, compact forms.
    static let inviteLines = [
        "INVITE sip:alice@alice.invalid;transport=tcp SIP/2.0",
        "Record-Route: <sip:127.0.0.1:5070;transport=tcp;lr>",
        "v: SIP/2.0/TCP 127.0.0.1:5070;branch=z9hG4bKproxy1, SIP/2.0/TCP 10.0.0.9:5070;branch=z9hG4bKproxy0",
        "Via: SIP/2.0/TCP bob.invalid;branch=z9hG4bKcaller;rport=40312;received=127.0.0.1",
        "Max-Forwards: 69",
        "f: \"Bob\" <sip:bob@127.0.0.1:5070>;tag=bobtag",
        "t: <sip:alice@127.0.0.1:5070>",
        "i: call-1@bob.invalid",
        "CSeq: 1 INVITE",
        "m: <sip:bob@bob.invalid;transport=tcp;alias=127.0.0.1~40312~2>",
        "c: application/sdp",
        "l: \(sdp.utf8.count)",
    ]

    static func invite() throws -> SIPMessage { try message(inviteLines, body: sdp) }

    static func registerLines(user: String = "alice", contact: String = "<sip:alice@alice.invalid;transport=tcp>", expires: Int = 600) -> [String] {
        [
            "REGISTER sip:127.0.0.1 SIP/2.0",
            "Via: SIP/2.0/TCP \(user).invalid;branch=z9hG4bKreg\(expires);rport",
            "Max-Forwards: 70",
            "From: <sip:\(user)@127.0.0.1>;tag=regtag",
            "To: <sip:\(user)@127.0.0.1>",
            "Call-ID: reg-\(user)@\(user).invalid",
            "CSeq: 1 REGISTER",
            "Contact: \(contact)",
            "Expires: \(expires)",
            "Content-Length: 0",
        ]
    }
}

/// A deterministic xorshift generator, so that fuzzed inputs repeat from run to run.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }
}

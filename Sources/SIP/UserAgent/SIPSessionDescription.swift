/// The minimal SDP offer and answer the user agents put in INVITE and 200 OK.
public enum SIPSessionDescription {
    /// The Content-Type of an SDP body.
    public static let contentType = "application/sdp"

    /// One PCMU audio stream on 127.0.0.1 at `port`.
    public static func audio(user: String, port: UInt16, sessionID: UInt32 = 1) -> [UInt8] {
        let lines = [
            "v=0",
            "o=\(user) \(sessionID) 1 IN IP4 127.0.0.1",
            "s=voipd",
            "c=IN IP4 127.0.0.1",
            "t=0 0",
            "m=audio \(port) RTP/AVP 0",
            "a=rtpmap:0 PCMU/8000",
        ]
        return Array(lines.map { $0 + "\r\n" }.joined().utf8)
    }
}

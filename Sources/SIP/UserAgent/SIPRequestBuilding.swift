extension SIPMessage {
    /// A request from a user agent, with the headers of RFC 3261 8.1.1 in the usual order.
    static func userAgentRequest(
        _ method: SIPMethod, uri: SIPURI, via: String, from: String, to: String, callID: String,
        cseq: UInt32, routes: [String] = [], extraHeaders: [(name: String, value: String)] = [],
        body: [UInt8] = []
    ) -> SIPMessage {
        var headers: [(name: String, value: String)] = [("Via", via), ("Max-Forwards", "70")]
        headers += routes.map { ("Route", $0) }
        headers += [("From", from), ("To", to), ("Call-ID", callID), ("CSeq", "\(cseq) \(method)")]
        headers += extraHeaders
        return .request(method, uri: uri, headers: headers, body: body)
    }

    /// Adds the Content-Type and body of an SDP offer or answer.
    mutating func attachSessionDescription(_ body: [UInt8]) {
        headers.set("Content-Type", SIPSessionDescription.contentType)
        self.body = body
    }

    /// A Via value for a user agent, with a new branch; `rport` asks the next hop to note the
    /// source port (RFC 3581) and to answer there, since `host` may not be resolvable and a
    /// TCP connection's source port is not the one in sent-by.
    static func userAgentVia(transport: SIPTransport, host: String, port: UInt16?) -> String {
        "SIP/2.0/\(transport) \(port.map { "\(host):\($0)" } ?? host);branch=\(SIPIdentifiers.branch());rport"
    }

    /// `<sip:USER@HOST[:PORT];transport=udp|tcp>`
    static func userAgentContact(user: String, host: String, port: UInt16?, transport: SIPTransport) -> String {
        "<sip:\(user)@\(port.map { "\(host):\($0)" } ?? host);transport=\(transport.parameterValue)>"
    }
}

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
}

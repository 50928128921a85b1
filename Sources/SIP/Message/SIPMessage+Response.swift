extension SIPMessage {
    /// A response to `request` as RFC 3261 8.2.6 builds it: Via (every line, in order), From,
    /// To, Call-ID and CSeq copied exactly; `toTag` appended to To unless it already has a tag;
    /// Record-Route copied into responses that can establish a dialog (101–299, RFC 3261 12.1.1).
    ///
    /// Add Contact, Content-Type and a body to the result as needed.
    public static func response(
        to request: SIPMessage, statusCode: Int, reasonPhrase: String? = nil, toTag: String? = nil
    ) -> SIPMessage {
        var headers = SIPHeaders()
        headers.copy("Via", from: request.headers)
        headers.copy("From", from: request.headers)
        if let to = request.headers["To"] {
            if let toTag, request.toTag == nil, statusCode != 100 {
                headers.add("To", "\(to);tag=\(toTag)")
            } else {
                headers.add("To", to)
            }
        }
        headers.copy("Call-ID", from: request.headers)
        headers.copy("CSeq", from: request.headers)
        if (101...299).contains(statusCode) {
            headers.copy("Record-Route", from: request.headers)
        }
        return SIPMessage(
            startLine: .response(statusCode: statusCode, reasonPhrase: reasonPhrase ?? SIPStatus.reasonPhrase(for: statusCode)),
            headers: headers)
    }
}

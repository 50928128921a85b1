extension SIPMessage {
    /// The message as sent on the wire. Content-Length is always written, last, from the
    /// body's actual size, whatever the headers say.
    public func serialized() -> [UInt8] {
        var text: String
        switch startLine {
        case .request(let method, let uri): text = "\(method) \(uri) SIP/2.0\r\n"
        case .response(let code, let reason): text = "SIP/2.0 \(code) \(reason)\r\n"
        }
        for field in headers where field.key != "content-length" {
            text += "\(field.name): \(field.value)\r\n"
        }
        text += "Content-Length: \(body.count)\r\n\r\n"
        return Array(text.utf8) + body
    }
}

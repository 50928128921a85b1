/// A SIP request or response.
///
/// Build one with ``request(_:uri:headers:body:)`` or ``response(to:statusCode:reasonPhrase:toTag:)``,
/// read one with ``init(parsing:)`` (or a ``SIPStreamFramer`` on a stream) and write one
/// with ``serialized()``.
public struct SIPMessage: Hashable, Sendable {
    /// The first line of a message.
    public enum StartLine: Hashable, Sendable {
        /// `METHOD Request-URI SIP/2.0`
        case request(method: SIPMethod, uri: SIPURI)
        /// `SIP/2.0 Status-Code Reason-Phrase`
        case response(statusCode: Int, reasonPhrase: String)
    }

    /// The request or status line.
    public var startLine: StartLine
    /// The header lines in order; Content-Length among them is rewritten on serialization.
    public var headers: SIPHeaders
    /// The body, as many bytes as Content-Length says.
    public var body: [UInt8]

    public init(startLine: StartLine, headers: SIPHeaders, body: [UInt8] = []) {
        self.startLine = startLine
        self.headers = headers
        self.body = body
    }

    /// A request with the given headers, in order.
    public static func request(
        _ method: SIPMethod, uri: SIPURI, headers: [(name: String, value: String)], body: [UInt8] = []
    ) -> SIPMessage {
        SIPMessage(startLine: .request(method: method, uri: uri), headers: SIPHeaders(headers), body: body)
    }

    /// Whether this is a request rather than a response.
    public var isRequest: Bool {
        if case .request = startLine { true } else { false }
    }

    /// The method of a request; nil for a response (see ``cseq`` for the method it answers).
    public var method: SIPMethod? {
        if case .request(let method, _) = startLine { method } else { nil }
    }

    /// The Request-URI of a request.
    public var requestURI: SIPURI? {
        get {
            if case .request(_, let uri) = startLine { uri } else { nil }
        }
        set {
            if case .request(let method, _) = startLine, let newValue {
                startLine = .request(method: method, uri: newValue)
            }
        }
    }

    /// The status code of a response.
    public var statusCode: Int? {
        if case .response(let code, _) = startLine { code } else { nil }
    }

    /// The reason phrase of a response.
    public var reasonPhrase: String? {
        if case .response(_, let reason) = startLine { reason } else { nil }
    }

    /// The body as text, when it is UTF-8.
    public var bodyText: String? { String(validating: body, as: UTF8.self) }

    /// A one-line summary for logs: `INVITE sip:alice@… (CSeq 1 INVITE)` or `180 Ringing (CSeq 1 INVITE)`.
    public var summary: String {
        let cseq = headers["CSeq"].map { " (CSeq \($0))" } ?? ""
        switch startLine {
        case .request(let method, let uri): return "\(method) \(uri)\(cseq)"
        case .response(let code, let reason): return "\(code) \(reason)\(cseq)"
        }
    }
}

// Typed views of the headers. A message from ``SIPMessage/init(parsing:)`` or a
// ``SIPStreamFramer`` has passed validation, so the mandatory ones are present and readable;
// a message built by hand may lack them, hence the optionals.
extension SIPMessage {
    /// The Call-ID header.
    public var callID: String? { headers["Call-ID"] }

    /// The CSeq header, read.
    public var cseq: SIPCSeq? { headers["CSeq"].flatMap { try? SIPCSeq(parsing: $0) } }

    /// The From header, read.
    public var from: SIPNameAddress? { headers["From"].flatMap { try? SIPNameAddress(parsing: $0) } }

    /// The To header, read.
    public var to: SIPNameAddress? { headers["To"].flatMap { try? SIPNameAddress(parsing: $0) } }

    /// The tag of From.
    public var fromTag: String? { from?.tag }

    /// The tag of To; nil outside a dialog.
    public var toTag: String? { to?.tag }

    /// Every Via value, topmost first.
    public var vias: [SIPVia] { headers.values("Via").compactMap { try? SIPVia(parsing: $0) } }

    /// The topmost Via: the hop a response goes back to.
    public var topVia: SIPVia? { vias.first }

    /// The first Contact value (`nil` for none or for `*`).
    public var contact: SIPNameAddress? { contacts.first }

    /// Every Contact value.
    public var contacts: [SIPNameAddress] { addresses("Contact") }

    /// Every Record-Route value, topmost first.
    public var recordRoutes: [SIPNameAddress] { addresses("Record-Route") }

    /// Every Route value, topmost first.
    public var routes: [SIPNameAddress] { addresses("Route") }

    /// The Expires header in seconds.
    public var expires: Int? { headers["Expires"].flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil } }

    /// The Max-Forwards header.
    public var maxForwards: Int? { headers["Max-Forwards"].flatMap { UInt8($0) }.map(Int.init) }

    /// The Content-Length header; nil when absent or malformed.
    public var contentLength: Int? { try? SIPMessageParser.contentLength(headers) }

    private func addresses(_ name: String) -> [SIPNameAddress] {
        headers.values(name).compactMap { try? SIPNameAddress(parsing: $0) }
    }
}

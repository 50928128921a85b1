/// Header name rules: compact forms and which headers hold comma-separated lists.
enum SIPHeaderName {
    /// RFC 3261 7.3.3 and later RFCs' one-letter forms, mapped to the full names.
    static let compactForms: [String: String] = [
        "i": "Call-ID", "m": "Contact", "e": "Content-Encoding", "l": "Content-Length",
        "c": "Content-Type", "f": "From", "s": "Subject", "k": "Supported", "t": "To", "v": "Via",
        "o": "Event", "r": "Refer-To", "u": "Allow-Events", "b": "Referred-By", "x": "Session-Expires",
        "a": "Accept-Contact", "j": "Reject-Contact", "d": "Request-Disposition",
    ]

    // Headers whose values may be joined with commas on one line (RFC 3261 7.3.1). Others,
    // such as Date or WWW-Authenticate, contain commas that do not separate values.
    private static let listHeaders: Set<String> = [
        "via", "route", "record-route", "contact", "path", "service-route", "allow", "supported",
        "require", "proxy-require", "unsupported", "accept", "accept-encoding", "accept-language",
        "content-encoding", "in-reply-to", "allow-events",
    ]

    /// The full name for a compact form, otherwise `name` unchanged.
    static func expanded(_ name: String) -> String {
        compactForms[name.lowercased()] ?? name
    }

    /// The key headers are compared by: expanded and lowercased.
    static func key(_ name: String) -> String { expanded(name).lowercased() }

    static func isList(key: String) -> Bool { listHeaders.contains(key) }
}

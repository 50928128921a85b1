/// A `HOST:PORT` pair from the command line: `127.0.0.1:5060`, `[::1]:5060` or
/// `sip.example.org:5060`.
struct HostPort: Hashable, CustomStringConvertible {
    var host: String
    var port: UInt16

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Reads `HOST:PORT`; nil when either part is missing or the port is not 1…65535.
    init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else {
            return nil
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.init(host: host, port: port)
    }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

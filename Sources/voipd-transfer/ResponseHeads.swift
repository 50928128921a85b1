import Foundation
import FoundationNetworking
import VoipdTransfers

extension HTTPResponseHead {
    static let maximumHeaders = 100
    static let maximumValueBytes = 4096
    static let maximumTotalBytes = 32768

    /// The head of a response, bounded so that any report fits in one frame (a server is
    /// as hostile as a client): at most 100 headers of 4 KiB, 32 KiB together as JSON
    /// writes them, by name. Counted as bytes, 32 KiB of quotes or slashes took 64 KiB in
    /// the report, which then did not fit, and the agent ended with every attempt it ran.
    init(_ response: HTTPURLResponse) {
        var lines: [HTTPHeader] = []
        var total = 0
        let fields = response.allHeaderFields.compactMap { key, value -> HTTPHeader? in
            guard let name = key as? String else { return nil }
            return HTTPHeader(name, "\(value)")
        }.sorted { $0.name.lowercased() < $1.name.lowercased() }
        for field in fields.prefix(Self.maximumHeaders) {
            let name = String(field.name.utf8.prefix(256)) ?? ""
            let value = String(decoding: field.value.utf8.prefix(Self.maximumValueBytes), as: UTF8.self)
            total += Self.encodedSize(name) + Self.encodedSize(value)
            guard total <= Self.maximumTotalBytes else { break }
            lines.append(HTTPHeader(name, value))
        }
        self.init(status: response.statusCode, headers: HTTPHeaders(lines))
    }

    /// The most bytes `text` takes inside a JSON string: `"`, `\` and `/` (JSONEncoder
    /// escapes slashes) take two, a control character up to six (`\u001f`).
    static func encodedSize(_ text: String) -> Int {
        text.utf8.reduce(0) { size, byte in
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return size + 2
            case ..<0x20: return size + 6
            default: return size + 1
            }
        }
    }
}

import Foundation
import FoundationNetworking
import VoipdTransfers

extension HTTPResponseHead {
    static let maximumHeaders = 100
    static let maximumValueBytes = 4096
    static let maximumTotalBytes = 32768

    /// The head of a response, bounded so that any report fits in one frame (a server is
    /// as hostile as a client): at most 100 headers of 4 KiB, 32 KiB together, by name.
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
            total += name.utf8.count + value.utf8.count
            guard total <= Self.maximumTotalBytes else { break }
            lines.append(HTTPHeader(name, value))
        }
        self.init(status: response.statusCode, headers: HTTPHeaders(lines))
    }
}

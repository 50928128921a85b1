/// One header line of a request or a response.
public struct HTTPHeader: Codable, Hashable, Sendable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// Header lines in order, looked up by name without regard to case (RFC 9110 §5.1).
public struct HTTPHeaders: Codable, Hashable, Sendable, ExpressibleByDictionaryLiteral, Sequence {
    public private(set) var lines: [HTTPHeader]

    public init(_ lines: [HTTPHeader] = []) { self.lines = lines }

    public init(dictionaryLiteral elements: (String, String)...) {
        lines = elements.map { HTTPHeader($0.0, $0.1) }
    }

    public init(from decoder: any Decoder) throws {
        lines = try decoder.singleValueContainer().decode([HTTPHeader].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(lines)
    }

    public func makeIterator() -> IndexingIterator<[HTTPHeader]> { lines.makeIterator() }

    public var count: Int { lines.count }

    /// The first value of `name`, if present.
    public subscript(name: String) -> String? {
        let key = name.lowercased()
        return lines.first { $0.name.lowercased() == key }?.value
    }

    /// Every value of `name`, in order.
    public func values(of name: String) -> [String] {
        let key = name.lowercased()
        return lines.filter { $0.name.lowercased() == key }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public mutating func append(_ name: String, _ value: String) { lines.append(HTTPHeader(name, value)) }

    /// Replaces every line of `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        append(name, value)
    }

    public mutating func remove(_ name: String) {
        let key = name.lowercased()
        lines.removeAll { $0.name.lowercased() == key }
    }
}

/// The status line and headers of a response.
public struct HTTPResponseHead: Codable, Hashable, Sendable {
    public var status: Int
    public var headers: HTTPHeaders

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.headers = headers
    }

    public var isSuccess: Bool { (200..<300).contains(status) }

    /// A 401 that says how to authenticate (`WWW-Authenticate`): what URLSession turns into
    /// an authentication challenge. A 401 without it is an ordinary HTTP error.
    public var isChallenge: Bool { status == 401 && headers.contains("WWW-Authenticate") }
}

/// Which app a record, a held socket, a timer or a connection belongs to: the app's name, as
/// its manifest, its `hello` or its launch gave it.
///
/// Encoded as the bare name, so records written before it existed read the same.
struct AppID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    let name: String

    init(_ name: String) { self.name = name }

    init(stringLiteral name: String) { self.name = name }

    init(from decoder: any Decoder) throws {
        name = try decoder.singleValueContainer().decode(String.self)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }

    var description: String { name }

    static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.name < rhs.name }
}

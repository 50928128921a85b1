/// Which app a record, a held socket, a timer or a connection belongs to: the app's name, as
/// its manifest, its `hello` or its launch gave it.
///
/// Encoded as the bare name, so records written before it existed read the same.
///
/// Its name's hash is taken once, when it is made: an app's id is hashed on every turn of
/// the wake path (the app table, its held sockets, its timers), and hashing the name each
/// time was a few hundred instructions each.
struct AppID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    let name: String
    private let nameHash: Int

    init(_ name: String) {
        self.name = name
        nameHash = name.hashValue
    }

    init(stringLiteral name: String) { self.init(name) }

    init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    static func == (lhs: AppID, rhs: AppID) -> Bool { lhs.nameHash == rhs.nameHash && lhs.name == rhs.name }

    func hash(into hasher: inout Hasher) { hasher.combine(nameHash) }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }

    var description: String { name }

    static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.name < rhs.name }
}

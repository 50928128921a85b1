import VoipdVocabulary

/// A program's adoption rules: a socket is adopted when any rule takes it. Encoded as the
/// list of the rules' texts (`["sip", "udp:local=*:5062"]`).
public struct AdoptionPolicy: Hashable, Sendable {
    public var rules: [AdoptionRule]

    public init(rules: [AdoptionRule]) { self.rules = rules }

    /// Reads each text with ``AdoptionRule/init(parsing:)``; the first bad one is thrown.
    public init(parsing texts: [String]) throws {
        rules = try texts.map(AdoptionRule.init(parsing:))
    }

    /// The transports whose tables a discovery needs to read.
    public var transports: Set<NetworkSocket.Transport> { rules.reduce([]) { $0.union($1.transports) } }

    /// Decides for each of the program's sockets (all of them: the `sip` preset reads the
    /// whole set) whether it is adopted, and says why for each one.
    public func apply(to sockets: [NetworkSocket]) -> AdoptionReport {
        var report = AdoptionReport(adopted: [], ignored: [], unusedRules: [])
        var used: Set<Int> = []
        for socket in sockets {
            let verdicts = rules.map { $0.verdict(for: socket, programSockets: sockets) }
            if let index = verdicts.firstIndex(where: \.isMatch) {
                used.insert(index)
                report.adopted.append(.init(socket: socket, rule: rules[index].description, reasons: [verdicts[index].reason]))
            } else {
                report.ignored.append(.init(socket: socket, rule: nil, reasons: zip(rules, verdicts).map { "\($0): \($1.reason)" }))
            }
        }
        report.unusedRules = rules.indices.filter { !used.contains($0) }.map { rules[$0].description }
        return report
    }
}

extension AdoptionPolicy: Codable {
    public init(from decoder: any Decoder) throws {
        rules = try decoder.singleValueContainer().decode([AdoptionRule].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rules)
    }
}

/// What adoption rules made of a program's sockets: each socket adopted or not, and why, so
/// that nothing fails silently (logs, `voipctl status`).
public struct AdoptionReport: Sendable, Equatable, Codable {
    public struct Decision: Sendable, Equatable, Codable {
        public var socket: NetworkSocket
        /// The rule that took it (its text); nil when none did.
        public var rule: String?
        /// Why the rule took it; or, for a socket no rule took, each rule's reason.
        public var reasons: [String]
    }

    public var adopted: [Decision]
    public var ignored: [Decision]
    /// Rules that took no socket.
    public var unusedRules: [String]

    /// The inodes of the adopted sockets.
    public var adoptedInodes: Set<UInt64> { Set(adopted.map(\.socket.inode)) }

    /// What to warn about, or nil when every rule took something: a program with no adopted
    /// socket cannot be woken while suspended.
    public var warning: String? {
        if adopted.isEmpty {
            return "no socket matched the adoption rules (\(ignored.count) examined): nothing can wake this program while it is suspended"
        }
        if !unusedRules.isEmpty { return "rules that matched no socket: \(unusedRules.joined(separator: ", "))" }
        return nil
    }

    /// One line per socket, adopted first: for logs and `voipctl status`.
    public var lines: [String] {
        adopted.map { "adopted \($0.socket): \($0.reasons.joined(separator: "; "))" }
            + ignored.map { "ignored \($0.socket): \($0.reasons.joined(separator: "; "))" }
    }
}

import VoipdVocabulary

/// Which of a program's sockets voipd adopts as its VoIP sockets: a preset or a pattern.
/// Written as text in app manifests (`"adopt": ["sip"]`) and on `voipctl launch --adopt`;
/// ``init(parsing:)`` gives the syntax.
public enum AdoptionRule: Hashable, Sendable {
    /// The `sip` preset (``SIPPreset``).
    case sip(SIPPreset)
    /// Sockets matching a pattern.
    case pattern(SocketPattern)

    /// Whether `socket` is taken, and why. `programSIPPorts` is the preset's reading of all
    /// the program's sockets (``SIPPreset/programSIPPorts(_:)``).
    public func verdict(for socket: NetworkSocket, programSockets: [NetworkSocket]) -> RuleVerdict {
        switch self {
        case .sip(let preset): return preset.verdict(for: socket, programSIPPorts: preset.programSIPPorts(programSockets))
        case .pattern(let pattern): return pattern.verdict(for: socket)
        }
    }

    /// The transports the rule can match: a discovery need not read the other tables.
    public var transports: Set<NetworkSocket.Transport> {
        switch self {
        case .sip: return [.tcp, .udp]
        case .pattern(let pattern): return [pattern.transport]
        }
    }
}

extension AdoptionRule: Codable {
    /// Encoded as its text: `"sip"`, `"tcp:remote=*:5060"`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        do {
            self = try AdoptionRule(parsing: container.decode(String.self))
        } catch let error as AdoptionRuleError {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

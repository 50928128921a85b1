import VoipdVocabulary

/// A rule naming sockets by transport, role and ends: `tcp:remote=*:5060`,
/// `udp:local=*:5062`, `tcp:role=listening,local=10.0.0.1:*`.
public struct SocketPattern: Hashable, Sendable {
    public var transport: NetworkSocket.Transport
    /// Nil: any role. A remote pattern alone already means connected sockets.
    public var role: NetworkSocket.Role?
    public var local: EndpointPattern?
    /// Given, only sockets with a peer (connected ones) can match.
    public var remote: EndpointPattern?

    public init(transport: NetworkSocket.Transport, role: NetworkSocket.Role? = nil, local: EndpointPattern? = nil,
                remote: EndpointPattern? = nil) {
        self.transport = transport
        self.role = role
        self.local = local
        self.remote = remote
    }

    /// Whether `socket` matches, and in words why or why not.
    public func verdict(for socket: NetworkSocket) -> RuleVerdict {
        guard socket.transport == transport else { return .notMatched("not \(transport.rawValue)") }
        if let role, socket.role != role { return .notMatched("\(socket.role.rawValue), not \(role.rawValue)") }
        if let local, !local.accepts(socket.local, local: true) {
            return .notMatched("local end \(socket.local) not \(Self.text(local))")
        }
        if let remote {
            guard let peer = socket.remote else { return .notMatched("no remote end") }
            guard remote.accepts(peer, local: false) else { return .notMatched("remote end \(peer) not \(Self.text(remote))") }
        }
        return .matched(Self.text(self))
    }
}

/// Whether a rule took a socket, with the reason in words (for logs and `voipctl status`).
public enum RuleVerdict: Hashable, Sendable {
    case matched(String)
    case notMatched(String)

    public var isMatch: Bool {
        if case .matched = self { return true }
        return false
    }

    public var reason: String {
        switch self {
        case .matched(let reason), .notMatched(let reason): return reason
        }
    }
}

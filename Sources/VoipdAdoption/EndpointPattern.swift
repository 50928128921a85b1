import VoipdVocabulary

/// Which addresses a rule accepts: any, or a network (an address with a prefix length; a
/// single address is a network of 32 or 128 bits).
public enum AddressPattern: Hashable, Sendable {
    case any
    case network(IPAddress, prefixLength: Int)

    /// Whether `address` is accepted. IPv4-mapped IPv6 addresses (how dual-stack sockets
    /// show IPv4 peers) count as the IPv4 address.
    public func accepts(_ address: IPAddress) -> Bool {
        switch self {
        case .any: return true
        case .network(let network, let length): return address.isIn(network, length: length)
        }
    }
}

/// Which ports a rule accepts: any, or a range (one port is a range of one).
public enum PortPattern: Hashable, Sendable {
    case any
    case range(ClosedRange<UInt16>)

    public func accepts(_ port: UInt16) -> Bool {
        switch self {
        case .any: return true
        case .range(let range): return range.contains(port)
        }
    }
}

/// An address and port pattern for one end of a socket: `*:5060`, `10.0.0.0/8:*`,
/// `[2001:db8::1]:5060-5069`.
public struct EndpointPattern: Hashable, Sendable {
    public var address: AddressPattern
    public var port: PortPattern

    public init(address: AddressPattern = .any, port: PortPattern = .any) {
        self.address = address
        self.port = port
    }

    /// Whether `endpoint` is accepted. For a local end, a socket bound to the unspecified
    /// address (0.0.0.0 or ::) receives on every address of the machine, so any address
    /// pattern accepts it (`local`).
    public func accepts(_ endpoint: InetEndpoint, local: Bool) -> Bool {
        guard port.accepts(endpoint.port) else { return false }
        return (local && endpoint.address.isUnspecified) || address.accepts(endpoint.address)
    }
}

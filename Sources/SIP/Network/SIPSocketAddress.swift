import VoipdSystem
import VoipdVocabulary

/// An IPv4 or IPv6 address and port: where a datagram came from or goes to, where a socket
/// is bound. The system layer's ``InetEndpoint``, with what SIP needs to write it.
public typealias SIPSocketAddress = InetEndpoint

extension InetEndpoint {
    /// A numeric address (`127.0.0.1`, `::1`, `[::1]`); nil for anything else, names included.
    public init?(numericHost host: String, port: UInt16) {
        var host = host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let address = IPAddress(host) else { return nil }
        self.init(address: address, port: port)
    }

    /// The first address `host` resolves to for datagrams (a name is looked up).
    public static func resolve(host: String, port: UInt16) throws(SIPSocketError) -> InetEndpoint {
        do {
            return try Socket.resolve(host: host, port: port, type: Socket.datagramType)[0]
        } catch {
            throw SIPSocketError(error)
        }
    }

    /// The wildcard address of this family (`0.0.0.0` or `::`), port 0.
    public var unspecified: InetEndpoint {
        InetEndpoint(address: IPAddress(bytes: [UInt8](repeating: 0, count: address.bytes.count))!, port: 0)
    }

    /// This address with another port.
    public func with(port: UInt16) -> InetEndpoint { InetEndpoint(address: address, port: port) }

    /// The address without the port: `127.0.0.1` or `::1`.
    public var host: String { address.description }

    /// The host as written in a SIP URI or Via: IPv6 in brackets.
    public var uriHost: String { address.family == .ipv6 ? "[\(host)]" : host }
}

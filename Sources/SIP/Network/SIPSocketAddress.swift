#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and port: where a datagram came from or goes to, where a socket
/// is bound. Two addresses are equal when family, address and port are.
public struct SIPSocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// `AF_INET` or `AF_INET6`.
    public let family: Int32
    /// The address in network order: 4 or 16 bytes.
    public let address: [UInt8]
    public let port: UInt16

    /// A numeric address (`127.0.0.1`, `::1`, `[::1]`); nil for anything else, names included.
    public init?(numericHost host: String, port: UInt16) {
        var host = host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            self.init(family: AF_INET, address: withUnsafeBytes(of: v4) { Array($0) }, port: port)
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            self.init(family: AF_INET6, address: withUnsafeBytes(of: v6) { Array($0) }, port: port)
        } else {
            return nil
        }
    }

    /// The first address `host` resolves to for datagrams (a name is looked up).
    public static func resolve(host: String, port: UInt16) throws(SIPSocketError) -> SIPSocketAddress {
        if let numeric = SIPSocketAddress(numericHost: host, port: port) { return numeric }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else { throw SIPSocketError("resolve \(host): \(String(cString: gai_strerror(status)))", errno: EINVAL) }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry?.pointee {
            entry = info.ai_next
            if let address = info.ai_addr.flatMap({ SIPSocketAddress(socketAddress: $0, length: info.ai_addrlen) }) { return address }
        }
        throw SIPSocketError("resolve \(host): no IPv4 or IPv6 address", errno: EINVAL)
    }

    init(family: Int32, address: [UInt8], port: UInt16) {
        self.family = family
        self.address = address
        self.port = port
    }

    /// Reads a `sockaddr_in` or `sockaddr_in6`; nil for other families.
    init?(socketAddress pointer: UnsafePointer<sockaddr>, length: socklen_t) {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let v4 = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in.self)
            self.init(family: AF_INET, address: withUnsafeBytes(of: v4.sin_addr) { Array($0) }, port: UInt16(bigEndian: v4.sin_port))
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let v6 = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in6.self)
            self.init(family: AF_INET6, address: withUnsafeBytes(of: v6.sin6_addr) { Array($0) }, port: UInt16(bigEndian: v6.sin6_port))
        default:
            return nil
        }
    }

    /// The wildcard address of this family (`0.0.0.0` or `::`), port 0.
    public var unspecified: SIPSocketAddress {
        SIPSocketAddress(family: family, address: [UInt8](repeating: 0, count: address.count), port: 0)
    }

    /// This address with another port.
    public func with(port: UInt16) -> SIPSocketAddress { SIPSocketAddress(family: family, address: address, port: port) }

    /// The address without the port: `127.0.0.1` or `::1`.
    public var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        _ = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The host as written in a SIP URI or Via: IPv6 in brackets.
    public var uriHost: String { family == AF_INET6 ? "[\(host)]" : host }

    /// `127.0.0.1:5060` or `[::1]:5060`.
    public var description: String { "\(uriHost):\(port)" }

    /// Calls `body` with this address as a `sockaddr` and its length.
    public func withSocketAddress<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result) rethrows -> Result {
        if family == AF_INET {
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &v4.sin_addr) { $0.copyBytes(from: address) }
            return try withUnsafePointer(to: &v4) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &v6.sin6_addr) { $0.copyBytes(from: address) }
        return try withUnsafePointer(to: &v6) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
    }

    /// The local (`peer` false) or remote address of a socket.
    public static func of(socket fd: Int32, peer: Bool = false) throws(SIPSocketError) -> SIPSocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
        }
        guard status == 0 else { throw SIPSocketError(peer ? "getpeername" : "getsockname") }
        let address = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SIPSocketAddress(socketAddress: $0, length: length) }
        }
        guard let address else { throw SIPSocketError(peer ? "getpeername" : "getsockname", errno: EAFNOSUPPORT) }
        return address
    }
}

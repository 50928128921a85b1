import CVoipd
import Glibc

/// The kernel's answer to "which way to this address?", as `ip route get` asks it
/// (`RTM_GETROUTE` for one destination on a `NETLINK_ROUTE` socket): the routing rules and
/// every table they name count, as they do for a connection, so a default route kept in a
/// table of its own (policy routing) is found as well as one in the main table. The kernel
/// answers within the `sendto`, so nothing waits.
public enum RouteLookup {
    /// A route the kernel would send a packet to the destination by.
    public struct Route: Equatable, Sendable {
        /// The interface the packet leaves by (`RTA_OIF`), and its name.
        public var interfaceIndex: UInt32
        public var interface: String
    }

    /// The route to `address` (4 bytes for IPv4, 16 for IPv6); nil when the kernel has none
    /// that leads anywhere (no route, or an unreachable, prohibit or blackhole one).
    public static func route(to address: [UInt8]) throws(Errno) -> Route? {
        guard address.count == 4 || address.count == 16 else { throw Errno(EINVAL, call: "RTM_GETROUTE: an address of \(address.count) bytes") }
        let socket = FileDescriptor(adopting: try valueOrErrno("socket(AF_NETLINK, NETLINK_ROUTE)") {
            Glibc.socket(voipd_AF_NETLINK, CInt(SOCK_RAW.rawValue) | voipd_SOCK_CLOEXEC | voipd_SOCK_NONBLOCK, NetlinkSubscription.routes)
        })
        let request = self.request(to: address)
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(voipd_AF_NETLINK)
        _ = try valueOrErrno("sendto(RTM_GETROUTE)") {
            request.withUnsafeBytes { bytes in
                withUnsafePointer(to: &kernel) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        sendto(socket.rawValue, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
        }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = try valueOrErrno("recv(RTM_GETROUTE)") {
            buffer.withUnsafeMutableBytes { recv(socket.rawValue, $0.baseAddress, $0.count, CInt(MSG_DONTWAIT)) }
        }
        return try answer(Array(buffer[0..<count]))
    }

    /// `nlmsghdr`, `rtmsg` and one `RTA_DST` attribute, in the host's byte order but for the
    /// address (network order, as given).
    public static func request(to address: [UInt8]) -> [UInt8] {
        let length = 16 + 12 + 4 + address.count
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        append(UInt32(length), to: &bytes)
        append(getRoute, to: &bytes)
        append(UInt16(1), to: &bytes)  // NLM_F_REQUEST
        append(UInt32(1), to: &bytes)  // sequence
        append(UInt32(0), to: &bytes)  // port id: the kernel assigns it
        // rtmsg: family, destination length, source length, tos, table, protocol, scope, type, flags.
        bytes += [UInt8(address.count == 4 ? AF_INET : AF_INET6), UInt8(address.count * 8), 0, 0, 0, 0, 0, 0]
        append(UInt32(0), to: &bytes)
        append(UInt16(4 + address.count), to: &bytes)
        append(attributeDestination, to: &bytes)
        bytes += address
        return bytes
    }

    /// The route an answer describes; nil for the errors that mean there is none.
    public static func answer(_ datagram: [UInt8]) throws(Errno) -> Route? {
        guard datagram.count >= 16 else { throw Errno(EPROTO, call: "RTM_GETROUTE: an answer of \(datagram.count) bytes") }
        let length = Int(load(UInt32.self, datagram, 0))
        let type = load(UInt16.self, datagram, 4)
        guard length >= 16, length <= datagram.count else { throw Errno(EPROTO, call: "RTM_GETROUTE: a message of \(length) bytes in \(datagram.count)") }
        if type == messageError {
            guard length >= 20 else { throw Errno(EPROTO, call: "RTM_GETROUTE: a short error") }
            let error = -load(Int32.self, datagram, 16)
            // No route (ENETUNREACH), an unreachable one (EHOSTUNREACH), a prohibit one
            // (EACCES), a blackhole (EINVAL): nothing leads there.
            if [ENETUNREACH, EHOSTUNREACH, EACCES, EPERM, EINVAL].contains(error) { return nil }
            throw Errno(error, call: "RTM_GETROUTE")
        }
        guard type == newRoute, length >= 28 else { throw Errno(EPROTO, call: "RTM_GETROUTE: an answer of type \(type)") }
        // rtm_type: only a unicast route carries packets out.
        guard datagram[16 + 7] == unicast else { return nil }
        var offset = 28
        while offset + 4 <= length {
            let attributeLength = Int(load(UInt16.self, datagram, offset))
            let attributeType = load(UInt16.self, datagram, offset + 2) & 0x3fff
            guard attributeLength >= 4, offset + attributeLength <= length else { break }
            if attributeType == attributeOutputInterface, attributeLength >= 8 {
                let index = load(UInt32.self, datagram, offset + 4)
                var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
                guard if_indextoname(index, &name) != nil else { return Route(interfaceIndex: index, interface: "") }
                return Route(interfaceIndex: index, interface: String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
            offset += (attributeLength + 3) & ~3
        }
        return nil
    }

    private static func load<T: FixedWidthInteger>(_: T.Type, _ bytes: [UInt8], _ offset: Int) -> T {
        bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
    }

    private static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes += $0 }
    }

    // <linux/netlink.h>, <linux/rtnetlink.h> (kernel ABI).
    private static let messageError: UInt16 = 2
    private static let newRoute: UInt16 = 24
    private static let getRoute: UInt16 = 26
    private static let attributeDestination: UInt16 = 1
    private static let attributeOutputInterface: UInt16 = 4
    private static let unicast: UInt8 = 1
}

/// The machine's network interfaces as `getifaddrs` lists them.
public enum NetworkInterfaces {
    /// The interfaces that are up with a carrier (`IFF_UP` and `IFF_RUNNING`), not loopback,
    /// and have an address other hosts can reach them at (IPv4, or IPv6 beyond link-local),
    /// in the kernel's order: the ones a local network may be reached through.
    public static func connected() throws(Errno) -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        _ = try valueOrErrno("getifaddrs") { getifaddrs(&list) }
        defer { freeifaddrs(list) }
        var names: [String] = []
        var entry = list
        while let current = entry?.pointee {
            entry = current.ifa_next
            let flags = current.ifa_flags
            guard flags & up != 0, flags & running != 0, flags & loopback == 0, let address = current.ifa_addr, let name = current.ifa_name else { continue }
            switch CInt(address.pointee.sa_family) {
            case AF_INET: break
            case AF_INET6:
                let linkLocal = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    withUnsafeBytes(of: pointer.pointee.sin6_addr) { $0[0] == 0xfe && $0[1] & 0xc0 == 0x80 }
                }
                if linkLocal { continue }
            default: continue
            }
            let text = String(cString: name)
            if !names.contains(text) { names.append(text) }
        }
        return names
    }

    // IFF_UP, IFF_LOOPBACK, IFF_RUNNING (<net/if.h>).
    private static let up: UInt32 = 0x1
    private static let loopback: UInt32 = 0x8
    private static let running: UInt32 = 0x40
}

import CVoipd
import Glibc

/// A netlink socket subscribed to broadcasts of the kernel: the route table's changes
/// (`NETLINK_ROUTE` and its `RTMGRP_*` groups) or the kernel's device events
/// (`NETLINK_KOBJECT_UEVENT`, group 1, the messages udev itself listens to). Non-blocking and
/// close-on-exec, for an epoll loop: each readable turn drains it with ``receiveAll(limit:)``.
public struct NetlinkSubscription: ~Copyable {
    public let descriptor: FileDescriptor

    /// `NETLINK_ROUTE`'s multicast groups (`<linux/rtnetlink.h>`, kernel ABI).
    public enum RouteGroup {
        public static let link: UInt32 = 0x1
        public static let ipv4Address: UInt32 = 0x10
        public static let ipv4Route: UInt32 = 0x40
        public static let ipv4Rule: UInt32 = 0x80
        public static let ipv6Address: UInt32 = 0x100
        public static let ipv6Route: UInt32 = 0x400
        /// `RTNLGRP_IPV6_RULE`: a group number past the 32 bits of `nl_groups`, joined with
        /// `NETLINK_ADD_MEMBERSHIP` (``init(protocol:groups:memberships:receiveBuffer:)``).
        public static let ipv6RuleMembership: CInt = 19
    }

    /// `NETLINK_ROUTE` (`<linux/netlink.h>`), whose groups are ``RouteGroup``'s.
    public static let routes: CInt = 0

    /// `NETLINK_KOBJECT_UEVENT` (`<linux/netlink.h>`); its group 1 carries the kernel's own
    /// messages (group 2 is udev's re-broadcast, which needs udev).
    public static let kernelObjectEvents: CInt = 15
    public static let kernelEventGroup: UInt32 = 1

    /// Opens a socket of `netlinkProtocol` joined to `groups`, with a receive buffer of at
    /// least `receiveBuffer` bytes (a burst of events must not overflow it; if one does,
    /// ``receiveAll(limit:)`` says so and the reader reads the state afresh). `memberships`
    /// are groups joined by number, for those `groups`' bits cannot name.
    public init(protocol netlinkProtocol: CInt, groups: UInt32, memberships: [CInt] = [], receiveBuffer: Int = 256 << 10) throws(Errno) {
        let socket = FileDescriptor(adopting: try valueOrErrno("socket(AF_NETLINK, \(netlinkProtocol))") {
            Glibc.socket(voipd_AF_NETLINK, CInt(SOCK_RAW.rawValue) | voipd_SOCK_CLOEXEC | voipd_SOCK_NONBLOCK, netlinkProtocol)
        })
        var size = CInt(receiveBuffer)
        _ = try valueOrErrno("setsockopt(SO_RCVBUF)") {
            setsockopt(socket.rawValue, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
        }
        var address = sockaddr_nl()
        address.nl_family = sa_family_t(voipd_AF_NETLINK)
        address.nl_groups = groups
        _ = try valueOrErrno("bind(AF_NETLINK, groups \(groups))") {
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.rawValue, $0, socklen_t(MemoryLayout<sockaddr_nl>.size)) }
            }
        }
        for group in memberships {
            var number = group
            // SOL_NETLINK, NETLINK_ADD_MEMBERSHIP (<linux/netlink.h>).
            _ = try valueOrErrno("setsockopt(NETLINK_ADD_MEMBERSHIP, \(group))") {
                setsockopt(socket.rawValue, 270, 1, &number, socklen_t(MemoryLayout<CInt>.size))
            }
        }
        descriptor = socket
    }

    /// What one drain of the socket found.
    public struct Received {
        /// The datagrams from the kernel (port id 0), in order; anything sent by another
        /// process is left out.
        public var datagrams: [[UInt8]] = []
        /// Messages were lost (`ENOBUFS`): the reader must not rely on having seen every change.
        public var overflowed = false
    }

    /// Reads every datagram waiting, at most `limit` of them (the rest wait for the next turn).
    public borrowing func receiveAll(limit: Int = 256) throws(Errno) -> Received {
        var received = Received()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while received.datagrams.count < limit {
            var sender = sockaddr_nl()
            var senderLength = socklen_t(MemoryLayout<sockaddr_nl>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &sender) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(descriptor.rawValue, bytes.baseAddress, bytes.count, CInt(MSG_DONTWAIT), $0, &senderLength)
                    }
                }
            }
            if count < 0 {
                let error = Errno.current("recvfrom(AF_NETLINK)")
                if error == .wouldBlock { break }
                if error == .interrupted { continue }
                if error == .noBufferSpace {
                    received.overflowed = true
                    continue
                }
                throw error
            }
            // Only the kernel speaks on these groups; a process could send to them only with
            // privileges, but a datagram from anyone else is not the kernel's word.
            guard sender.nl_pid == 0 else { continue }
            received.datagrams.append(Array(buffer[0..<count]))
        }
        return received
    }
}

/// The kernel's device event messages (`NETLINK_KOBJECT_UEVENT`): `ACTION@DEVPATH` and then
/// `KEY=VALUE` fields, each ending with a NUL byte.
public struct KernelUevent: Equatable, Sendable {
    public var action: String
    public var devicePath: String
    public var properties: [String: String]

    public var subsystem: String? { properties["SUBSYSTEM"] }

    /// The event a datagram carries; nil for anything else (udev's re-broadcasts start with
    /// `libudev`, and are not read here).
    public static func decode(_ datagram: [UInt8]) -> KernelUevent? {
        let fields = datagram.split(separator: 0, omittingEmptySubsequences: true).map { String(decoding: $0, as: UTF8.self) }
        guard let header = fields.first, let at = header.firstIndex(of: "@"), !header.hasPrefix("libudev") else { return nil }
        var properties: [String: String] = [:]
        for field in fields.dropFirst() {
            guard let equals = field.firstIndex(of: "=") else { continue }
            properties[String(field[..<equals])] = String(field[field.index(after: equals)...])
        }
        return KernelUevent(action: String(header[..<at]), devicePath: String(header[header.index(after: at)...]), properties: properties)
    }
}

/// The route netlink messages of a datagram (`struct nlmsghdr`s, each aligned to 4 bytes).
public enum RouteNetlinkMessages {
    /// `RTM_*` message types (`<linux/rtnetlink.h>`, kernel ABI).
    public static let newLink: UInt16 = 16
    public static let deleteLink: UInt16 = 17
    public static let newAddress: UInt16 = 20
    public static let deleteAddress: UInt16 = 21
    public static let newRoute: UInt16 = 24
    public static let deleteRoute: UInt16 = 25
    public static let newRule: UInt16 = 32
    public static let deleteRule: UInt16 = 33

    /// The types of the messages in `datagram`, in order; a truncated message ends the list.
    public static func types(in datagram: [UInt8]) -> [UInt16] {
        var types: [UInt16] = []
        var offset = 0
        let headerSize = 16
        while datagram.count - offset >= headerSize {
            // The header's fields are in the host's byte order.
            let (length, type) = datagram.withUnsafeBytes { bytes in
                (Int(bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)), bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt16.self))
            }
            guard length >= headerSize, length <= datagram.count - offset else { break }
            types.append(type)
            offset += (length + 3) & ~3
        }
        return types
    }

    /// Whether a message of this type changes which network is up: a link, an address, a
    /// route or a routing rule that came or went.
    public static func changesConnectivity(_ type: UInt16) -> Bool {
        [newLink, deleteLink, newAddress, deleteAddress, newRoute, deleteRoute, newRule, deleteRule].contains(type)
    }
}

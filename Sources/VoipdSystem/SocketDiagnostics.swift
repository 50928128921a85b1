import CVoipd
import Glibc
import VoipdVocabulary

/// The kernel's TCP and UDP socket tables, read through `NETLINK_SOCK_DIAG` (inet_diag): how
/// voipd learns the state, addresses, receive queue and inode of the sockets it finds in a
/// program's descriptors.
///
/// Preferred over /proc/net/tcp, tcp6, udp and udp6 because the kernel filters by state
/// before sending (the ownerless `TIME_WAIT` sockets of a busy machine never cross), the
/// records are fixed binary structures rather than text to parse, one dump reads a whole
/// table in few system calls, and the answers come as the kernel's own structures with the
/// queue lengths the /proc text rounds for UDP. /proc/PID/net is the fallback for a kernel
/// without `inet_diag`/`udp_diag` and for a program in another network namespace that voipd
/// may not enter (``ProcNetSocketTable``).
///
/// A diagnostics socket answers for the network namespace it was created in, one dump at a
/// time: each dump is read to its end (the kernel refuses a new dump while one is unread), so
/// after a dump that threw, make a new socket.
public final class SocketDiagnostics {
    let descriptor: FileDescriptor
    private var sequence: UInt32 = 0

    /// A diagnostics socket in the caller's network namespace
    /// (`socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG)`).
    public init() throws {
        let fd = try valueOrErrno("socket(AF_NETLINK, NETLINK_SOCK_DIAG)") {
            socket(voipd_AF_NETLINK, CInt(SOCK_RAW.rawValue) | voipd_SOCK_CLOEXEC | voipd_SOCK_NONBLOCK, NETLINK_SOCK_DIAG)
        }
        descriptor = FileDescriptor(adopting: fd)
    }

    /// A diagnostics socket in the network namespace `namespace` refers to (an open
    /// /proc/PID/ns/net). A short-lived thread enters the namespace (`setns(CLONE_NEWNET)`),
    /// makes the socket and ends, so the caller's own thread never leaves its namespace.
    /// `setns` needs `CAP_SYS_ADMIN` both in voipd's user namespace and in the one owning the
    /// target: a voipd without it gets `EPERM` here and reads /proc/PID/net instead.
    public init(inNetworkNamespace namespace: borrowing FileDescriptor) throws {
        let fd = try Self.socketInNamespace(namespace.rawValue)
        descriptor = FileDescriptor(adopting: fd)
    }

    /// Every socket of one family (`AF_INET`, `AF_INET6`) and transport in the namespace whose
    /// state is in `states`, passed one datagram's worth at a time to `body`, which returns
    /// false to stop early. At most `limit` records are read: past it the dump stops and
    /// `EOVERFLOW` is thrown, so a namespace with millions of sockets cannot hold voipd's loop.
    /// After `body` has said stop, the rest of the dump is read and dropped: in a table with
    /// few sockets the kernel has walked it all by the first datagram anyway.
    /// With `localPort`, only the sockets bound to that port are read (the kernel filters).
    public func dump(family: CInt, transport: NetworkSocket.Transport, states: UInt32, limit: Int, localPort: UInt16? = nil,
                     _ body: ([NetworkSocket]) throws -> Bool) throws {
        sequence &+= 1
        let sequence = sequence
        var wanted = true
        let request = InetDiagMessages.dumpRequest(family: family, protocol: transport == .tcp ? CInt(IPPROTO_TCP) : CInt(IPPROTO_UDP),
                                                   states: states, sequence: sequence, localPort: localPort)
        var kernel = sockaddr_nl()
        kernel.nl_family = sa_family_t(voipd_AF_NETLINK)
        let sent = request.withUnsafeBytes { bytes in
            withUnsafePointer(to: &kernel) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor.rawValue, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
        }
        if sent < 0 { throw Errno.current("sendto(NETLINK_SOCK_DIAG)") }
        // A dump fills the next datagram as the previous one is read, so it is always ready:
        // EAGAIN on this non-blocking socket means the dump stalled, never "wait".
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        var read = 0
        while true {
            var sender = sockaddr_nl()
            var senderLength = socklen_t(MemoryLayout<sockaddr_nl>.size)
            let count = try buffer.withUnsafeMutableBytes { bytes in
                try valueOrErrno("recvfrom(NETLINK_SOCK_DIAG)") {
                    withUnsafeMutablePointer(to: &sender) { address in
                        address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(descriptor.rawValue, bytes.baseAddress, bytes.count, 0, $0, &senderLength)
                        }
                    }
                }
            }
            // Only the kernel (port 0) answers; anything else is not ours to read.
            guard sender.nl_pid == 0 else { continue }
            let batch = try buffer.withUnsafeBytes {
                try InetDiagMessages.decode(UnsafeRawBufferPointer(rebasing: $0[..<count]), transport: transport, sequence: sequence)
            }
            switch batch {
            case .sockets(let sockets):
                read += sockets.count
                if wanted { wanted = try body(sockets) }
                if read >= limit { throw Errno(EOVERFLOW, call: "NETLINK_SOCK_DIAG: more than \(limit) sockets in one table") }
            case .done(let sockets):
                if wanted { _ = try body(sockets) }
                return
            }
        }
    }

    private final class NamespaceRequest: @unchecked Sendable {
        let namespace: CInt
        var descriptor: CInt = -1
        var error = Errno(0)

        init(namespace: CInt) { self.namespace = namespace }
    }

    private static func socketInNamespace(_ namespace: CInt) throws -> CInt {
        let request = NamespaceRequest(namespace: namespace)
        let context = Unmanaged.passRetained(request)
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { raw in
            let request = Unmanaged<NamespaceRequest>.fromOpaque(raw!).takeRetainedValue()
            guard voipd_setns(request.namespace, voipd_CLONE_NEWNET) == 0 else {
                request.error = Errno.current("setns(CLONE_NEWNET)")
                return nil
            }
            request.descriptor = socket(voipd_AF_NETLINK, CInt(SOCK_RAW.rawValue) | voipd_SOCK_CLOEXEC | voipd_SOCK_NONBLOCK,
                                        NETLINK_SOCK_DIAG)
            if request.descriptor < 0 { request.error = Errno.current("socket(AF_NETLINK, NETLINK_SOCK_DIAG)") }
            return nil
        }, context.toOpaque())
        guard created == 0 else {
            context.release()
            throw Errno(created, call: "pthread_create")
        }
        pthread_join(thread, nil)
        guard request.descriptor >= 0 else { throw request.error }
        return request.descriptor
    }
}

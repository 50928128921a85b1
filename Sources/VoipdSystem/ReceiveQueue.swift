import CVoipd
import Glibc

/// What waits in one socket's receive queue, read from a descriptor of it without consuming
/// or peeking at any of it: two system calls, no netlink round trip, for a check each time
/// data arrives. (The queues of every socket of a network namespace at once come from
/// ``SocketDiagnostics``.) Seed 004's second fate of a suspended app's socket ("the kernel
/// runs out of buffer space and kills the socket") is measured by ``chargedBytes`` against
/// ``bufferSize``.
public struct ReceiveQueue: Sendable, Equatable {
    /// What the app's next reads would return (`ioctl(SIOCINQ)`): all unread bytes of a
    /// stream; the size of the first datagram of a datagram socket.
    public var unreadBytes: Int
    /// The memory the kernel charges to the queue (`SO_MEMINFO`'s `SK_MEMINFO_RMEM_ALLOC`):
    /// the data and each packet's overhead, so a queue of small datagrams costs several times
    /// its payload. The kernel drops what arrives once this passes ``bufferSize``.
    public var chargedBytes: Int
    /// The receive buffer's limit (`SK_MEMINFO_RCVBUF`, twice `SO_RCVBUF` as set).
    public var bufferSize: Int
    /// Packets the kernel dropped because the queue was full (`SK_MEMINFO_DROPS`).
    public var drops: Int

    public init(unreadBytes: Int, chargedBytes: Int, bufferSize: Int, drops: Int) {
        self.unreadBytes = unreadBytes
        self.chargedBytes = chargedBytes
        self.bufferSize = bufferSize
        self.drops = drops
    }
}

extension Socket {
    /// The receive queue of a socket: of voipd's own, or of an app's through a duplicate
    /// from ``PidFd/duplicateDescriptor(_:)``. A listening TCP socket has no receive queue
    /// (`EINVAL`); a descriptor that is no socket is `ENOTTY` or `ENOTSOCK`.
    public static func receiveQueue(of socket: borrowing FileDescriptor) throws -> ReceiveQueue {
        var unread: CInt = 0
        _ = try valueOrErrno("ioctl(SIOCINQ)") { voipd_ioctl_int(socket.rawValue, voipd_SIOCINQ, &unread) }
        var values = [UInt32](repeating: 0, count: Int(voipd_SK_MEMINFO_VARS))
        var length = socklen_t(values.count * MemoryLayout<UInt32>.size)
        _ = try valueOrErrno("getsockopt(SO_MEMINFO)") { getsockopt(socket.rawValue, SOL_SOCKET, voipd_SO_MEMINFO, &values, &length) }
        return ReceiveQueue(unreadBytes: Int(unread), chargedBytes: Int(values[Int(voipd_SK_MEMINFO_RMEM_ALLOC)]),
                            bufferSize: Int(values[Int(voipd_SK_MEMINFO_RCVBUF)]), drops: Int(values[Int(voipd_SK_MEMINFO_DROPS)]))
    }
}

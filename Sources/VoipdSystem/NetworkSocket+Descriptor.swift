import CVoipd
import Glibc
import VoipdVocabulary

extension NetworkSocket {
    /// A TCP or UDP socket described from a descriptor of it (voipd's own, or a copy of a
    /// program's taken with ``PidFd/duplicateDescriptor(_:)``), as the kernel's socket tables
    /// would describe it, without reading a table: `getsockname`, `getpeername`, and the
    /// state and queues from `TCP_INFO`, `SIOCINQ`, `SIOCOUTQ` or `SO_MEMINFO`. A few system
    /// calls of the socket's own, where a table dump walks the whole machine's connection
    /// hash (docs/BENCHMARKS.md, "Where a discovery's time goes").
    ///
    /// Nil for a socket the tables do not list: a TCP socket neither listening nor connecting
    /// (closed, or only bound), a UDP socket not bound. Two differences from the tables,
    /// both small: a connection still being opened (`SYN_SENT`) has no peer yet
    /// (`getpeername` says `ENOTCONN`), and the receive queue of a connection whose peer has
    /// closed does not count the end of file (the tables count it as one byte until it is read).
    public static func describing(_ fd: borrowing FileDescriptor, transport: Transport, inode: UInt64) throws(Errno) -> NetworkSocket? {
        guard let local = try Socket.localEndpoint(of: fd) else { return nil }
        let remote: InetEndpoint?
        do {
            remote = try Socket.peerEndpoint(of: fd)
        } catch .socketNotConnected {
            remote = nil
        }
        switch transport {
        case .tcp:
            let info = try Socket.tcpStateAndUnacked(fd)
            guard let state = State(rawValue: info.state), state != .close else { return nil }
            if state == .listen {
                return NetworkSocket(transport: .tcp, state: .listen, local: local, remote: nil, receiveQueue: info.unacked, inode: inode)
            }
            return NetworkSocket(transport: .tcp, state: state, local: local, remote: remote,
                                 receiveQueue: try queue(fd, voipd_SIOCINQ, "ioctl(SIOCINQ)"),
                                 sendQueue: try queue(fd, voipd_SIOCOUTQ, "ioctl(SIOCOUTQ)"), inode: inode)
        case .udp:
            guard local.port != 0 else { return nil }
            // The tables give UDP's queues as the memory charged to them.
            var values = [UInt32](repeating: 0, count: Int(voipd_SK_MEMINFO_VARS))
            var length = socklen_t(values.count * MemoryLayout<UInt32>.size)
            _ = try valueOrErrno("getsockopt(SO_MEMINFO)") { getsockopt(fd.rawValue, SOL_SOCKET, voipd_SO_MEMINFO, &values, &length) }
            return NetworkSocket(transport: .udp, state: remote == nil ? .close : .established, local: local, remote: remote,
                                 receiveQueue: values[Int(voipd_SK_MEMINFO_RMEM_ALLOC)], sendQueue: values[Int(voipd_SK_MEMINFO_WMEM_ALLOC)],
                                 inode: inode)
        }
    }

    private static func queue(_ fd: borrowing FileDescriptor, _ request: UInt, _ call: String) throws(Errno) -> UInt32 {
        var value: CInt = 0
        _ = try valueOrErrno(call) { voipd_ioctl_int(fd.rawValue, request, &value) }
        return UInt32(clamping: value)
    }
}

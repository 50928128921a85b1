import CVoipd
import Glibc

/// How far a socket's receiving had got at one moment, so that what arrives later can be
/// told even after another holder of the socket has read it: the readiness of a socket
/// (`FIONREAD`, epoll) shows only what is still unread, and epoll drops an edge whose data
/// was read before `epoll_wait` looked.
///
/// Taken from a descriptor of the socket without consuming or peeking at anything. What the
/// kernel keeps depends on the kind of socket:
/// - TCP: the bytes received in sequence since the connection began (`TCP_INFO`'s
///   `tcpi_bytes_received`, Linux 4.1). Exact.
/// - UDP: when the last datagram read arrived (`SIOCGSTAMPNS`, which also makes the kernel
///   keep that time from then on). A datagram read since the mark shows as a new time; it
///   arrived after the mark when the queue was empty at the mark, or when its time is later
///   than the mark's. Left out: a datagram still inside the network stack at the instant of a
///   mark taken while older ones were queued (a window of microseconds).
/// - Anything else (Unix-domain sockets, listening sockets): no evidence; only what is
///   still unread shows.
public struct ReceiveMark: Sendable, Equatable {
    enum Evidence: Sendable, Equatable {
        case streamBytes(UInt64)
        /// `lastRead`: the arrival time of the last datagram read (nil: none read since the
        /// kernel began keeping it). `queueWasEmpty`: nothing was waiting at the mark.
        case datagram(lastRead: Int64?, takenAt: Int64, queueWasEmpty: Bool)
        case none
    }

    let evidence: Evidence

    /// Whether this kind of socket leaves any evidence of what was read.
    public var isEvidence: Bool { evidence != .none }

    /// The mark of `socket` now.
    public static func take(of socket: borrowing FileDescriptor) -> ReceiveMark {
        let fd = socket.rawValue
        if let bytes = Self.tcpBytesReceived(fd) { return ReceiveMark(evidence: .streamBytes(bytes)) }
        // The stamp before the time: on a socket where it was off, asking turns it on, and a
        // socket whose last read came before that reports "now" once. Unix-domain sockets have
        // no stamp (ENOTTY).
        guard case .some(let lastRead) = Self.lastDatagramRead(fd) else { return ReceiveMark(evidence: .none) }
        let empty = ((try? Socket.bytesAvailable(fd)) ?? 0) == 0
        return ReceiveMark(evidence: .datagram(lastRead: lastRead, takenAt: Self.realtimeNanoseconds(), queueWasEmpty: empty))
    }

    /// Whether something arrived on `socket` after this mark, read since or not.
    public func hasArrivedSince(on socket: borrowing FileDescriptor) -> Bool {
        let fd = socket.rawValue
        switch evidence {
        case .streamBytes(let then):
            guard let bytes = Self.tcpBytesReceived(fd) else { return false }
            return bytes != then
        case .datagram(let thenRead, let takenAt, let queueWasEmpty):
            if ((try? Socket.bytesAvailable(fd)) ?? 0) > 0 && queueWasEmpty { return true }
            guard case .some(let lastRead) = Self.lastDatagramRead(fd), let lastRead, lastRead != thenRead else { return false }
            return queueWasEmpty || lastRead > takenAt
        case .none:
            return false
        }
    }

    /// `tcpi_bytes_received`; nil for a socket that is not TCP, or a kernel without it.
    static func tcpBytesReceived(_ fd: CInt) -> UInt64? {
        var info = [UInt8](repeating: 0, count: voipd_TCP_INFO_SIZE)
        var length = socklen_t(info.count)
        let offset = voipd_TCPI_BYTES_RECEIVED_OFFSET
        let result = info.withUnsafeMutableBytes { getsockopt(fd, CInt(IPPROTO_TCP), voipd_TCP_INFO, $0.baseAddress, &length) }
        guard result == 0, Int(length) >= offset + 8 else { return nil }
        return info.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
    }

    /// The arrival time of the last datagram read, in CLOCK_REALTIME nanoseconds: `.some(nil)`
    /// when none was read since the kernel began keeping it (`ENOENT`), nil when the socket
    /// cannot say.
    static func lastDatagramRead(_ fd: CInt) -> Int64?? {
        var stamp = timespec()
        if voipd_ioctl_timespec(fd, voipd_SIOCGSTAMPNS, &stamp) < 0 { return errno == ENOENT ? .some(nil) : nil }
        return .some(Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec))
    }

    static func realtimeNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

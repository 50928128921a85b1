import CVoipd
import Glibc
import VoipdVocabulary

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
///   mark taken while older ones were queued (a window of microseconds). Too much shows in one
///   case: until the kernel's deferred work has turned receive timestamps on (the first socket
///   of the system to ask), a datagram read counts as arriving when it was read. No evidence of
///   what was read on a socket the program stamps itself (`SO_TIMESTAMP`, `SO_TIMESTAMPNS`,
///   `SO_TIMESTAMPING` for receiving, as oRTP does its RTP sockets): the kernel then hands
///   each stamp to the reader and keeps none (`ENOENT`); only what is still unread shows.
/// - A listening TCP socket: the peers of the connections on its port (`NETLINK_SOCK_DIAG`,
///   filtered by the kernel to that port), those waiting in its accept queue and those
///   accepted alike. A connection from a peer not among them arrived after the mark, accepted
///   since or not: an app stopped just after accepting one would otherwise never hear the
///   INVITE that follows on it. No evidence when voipd cannot see the listener in its own
///   socket table (it lives in another network namespace) or its port has more than
///   ``ReceiveMark/connectionLimit`` connections; too much shows when another listener shares
///   the port (`SO_REUSEPORT`).
/// - Anything else (Unix-domain sockets): no evidence; only what is still unread shows.
public struct ReceiveMark: Sendable, Equatable, Codable {
    enum Evidence: Sendable, Equatable, Codable {
        case streamBytes(UInt64)
        /// The peers of a listener's connections.
        case connections(Set<InetEndpoint>)
        /// `lastRead`: the arrival time of the last datagram read (nil: none read since the
        /// kernel began keeping it). `queueWasEmpty`: nothing was waiting at the mark.
        case datagram(lastRead: Int64?, takenAt: Int64, queueWasEmpty: Bool)
        case none
    }

    let evidence: Evidence

    /// Whether this kind of socket leaves any evidence of what was read.
    public var isEvidence: Bool { evidence != .none }

    /// A listener with more connections than this on its port leaves no evidence: the mark
    /// stays small, and a flood of connections costs voipd a bounded read.
    public static let connectionLimit = 1024

    /// The mark of `socket` now. With `takenOnly`, what still waits in the socket's queue
    /// counts as arriving after the mark: the mark of a socket with something the app was
    /// never told of, which it may take only after the mark and be stopped handling. Then
    /// the mark covers only the bytes the app has read (TCP), the connections it has accepted
    /// (a listener), and for UDP any datagram read later counts.
    ///
    /// `kind`, when the caller knows it (``Socket/kind(of:)``), spares the calls that would
    /// find out what it says: a Unix stream socket leaves no evidence at all.
    public static func take(of socket: borrowing FileDescriptor, kind: SocketKind? = nil, takenOnly: Bool = false) -> ReceiveMark {
        var waiting: Int?
        return take(of: socket, kind: kind, takenOnly: takenOnly, waiting: &waiting)
    }

    /// ``take(of:kind:takenOnly:)``, saying in `waiting` the bytes it found waiting when it
    /// asked the kernel (`FIONREAD`: a TCP socket's mark with `takenOnly`), and leaving it nil
    /// when it did not ask or the kernel did not answer: a caller about to ask the same (a
    /// registration's reply) can take this answer instead of a second call.
    public static func take(of socket: borrowing FileDescriptor, kind: SocketKind? = nil, takenOnly: Bool, waiting: inout Int?) -> ReceiveMark {
        if let kind, !kind.isNetwork, !kind.isDatagram { return ReceiveMark(evidence: .none) }
        // A listener first: TCP_INFO answers for it too, with no bytes ever received.
        if kind?.isListening ?? ListenerConnections.isListener(socket) {
            guard let peers = ListenerConnections.peers(of: socket, limit: connectionLimit, acceptedOnly: takenOnly) else {
                return ReceiveMark(evidence: .none)
            }
            return ReceiveMark(evidence: .connections(peers))
        }
        if kind?.isDatagram != true, let bytes = tcpBytesReceived(socket) {
            var unread: UInt64 = 0
            if takenOnly {
                // As `unreadBytes`: a socket that cannot say counts as empty for the mark.
                waiting = try? Socket.bytesAvailable(socket)
                unread = UInt64(max(0, waiting ?? 0))
            }
            return ReceiveMark(evidence: .streamBytes(bytes - min(bytes, unread)))
        }
        // The stamp before the time: on a socket where it was off, asking turns it on, and a
        // socket whose last read came before that reports "now" once.
        guard case .some(let lastRead) = lastDatagramRead(socket) else { return ReceiveMark(evidence: .none) }
        return ReceiveMark(evidence: .datagram(lastRead: lastRead, takenAt: realtimeNanoseconds(), queueWasEmpty: takenOnly || !hasUnread(socket)))
    }

    /// This mark, moved forward over what `reported` covered: what the app was told of, read
    /// since or left waiting, is not new (the bytes of a TCP socket, the connections of a
    /// listener, taken or waiting, when it was told).
    public func including(_ reported: ReceiveMark?) -> ReceiveMark {
        switch (evidence, reported?.evidence) {
        case (.streamBytes(let taken), .streamBytes(let told)?): return ReceiveMark(evidence: .streamBytes(max(taken, told)))
        case (.connections(let taken), .connections(let told)?): return ReceiveMark(evidence: .connections(taken.union(told)))
        default: return self
        }
    }

    /// Whether something arrived on `socket` after this mark, read since or not.
    public func hasArrivedSince(on socket: borrowing FileDescriptor) -> Bool {
        switch evidence {
        case .streamBytes(let then):
            guard let bytes = Self.tcpBytesReceived(socket) else { return false }
            return bytes != then
        case .connections(let then):
            guard let peers = ListenerConnections.peers(of: socket, limit: Self.connectionLimit) else { return false }
            return !peers.isSubset(of: then)
        case .datagram(let thenRead, let takenAt, let queueWasEmpty):
            if queueWasEmpty && Self.hasUnread(socket) { return true }
            guard case .some(let lastRead) = Self.lastDatagramRead(socket), let lastRead, lastRead != thenRead else { return false }
            return queueWasEmpty || lastRead > takenAt
        case .none:
            return false
        }
    }

    /// `tcpi_bytes_received`; nil for a socket that is not TCP (`EOPNOTSUPP`, `ENOPROTOOPT`),
    /// or a kernel that fills in less of `tcp_info`.
    static func tcpBytesReceived(_ socket: borrowing FileDescriptor) -> UInt64? {
        var info = [UInt8](repeating: 0, count: voipd_TCP_INFO_SIZE)
        var length = socklen_t(info.count)
        let offset = voipd_TCPI_BYTES_RECEIVED_OFFSET
        let fd = socket.rawValue
        do {
            _ = try info.withUnsafeMutableBytes { buffer throws(Errno) in
                try valueOrErrno("getsockopt(TCP_INFO)") { getsockopt(fd, CInt(IPPROTO_TCP), voipd_TCP_INFO, buffer.baseAddress, &length) }
            }
        } catch {
            // Not TCP: the socket keeps no count of bytes received.
            return nil
        }
        guard Int(length) >= offset + 8 else { return nil }
        return info.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
    }

    /// The arrival time of the last datagram read, in CLOCK_REALTIME nanoseconds: `.some(nil)`
    /// when none was read since the kernel began keeping it (`ENOENT`), nil when the socket
    /// has no stamp (Unix-domain sockets: `ENOTTY`).
    static func lastDatagramRead(_ socket: borrowing FileDescriptor) -> Int64?? {
        var stamp = timespec()
        let fd = socket.rawValue
        do {
            _ = try valueOrErrno("ioctl(SIOCGSTAMPNS)") { voipd_ioctl_timespec(fd, voipd_SIOCGSTAMPNS, &stamp) }
        } catch .noSuchFileOrDirectory {
            return .some(nil)
        } catch {
            return nil
        }
        return .some(Int64(stamp.tv_sec) * 1_000_000_000 + Int64(stamp.tv_nsec))
    }

    /// The bytes waiting; a socket that cannot say counts as empty (what waits then shows
    /// only as unread, not as taken after the mark).
    static func unreadBytes(_ socket: borrowing FileDescriptor) -> UInt64 {
        do {
            return UInt64(max(0, try Socket.bytesAvailable(socket)))
        } catch {
            return 0
        }
    }

    /// Whether a datagram waits; a socket that cannot say counts as empty (it then shows
    /// only through a later read).
    static func hasUnread(_ socket: borrowing FileDescriptor) -> Bool {
        do {
            return try Socket.bytesAvailable(socket) > 0
        } catch {
            return false
        }
    }

    static func realtimeNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

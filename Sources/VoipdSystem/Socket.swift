import CVoipd
import Glibc
import VoipdVocabulary

/// Credentials of the process at the other end of a Unix socket (`SO_PEERCRED`), as the
/// kernel recorded them at `connect`; never taken from anything the peer says.
public struct PeerCredentials: Sendable, Equatable, Codable {
    public var pid: pid_t
    public var uid: uid_t
    public var gid: gid_t

    public init(pid: pid_t, uid: uid_t, gid: gid_t) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }
}

/// What kind of socket a descriptor is, from `fstat` and `getsockopt`.
public struct SocketKind: Sendable, Equatable {
    public var domain: CInt
    public var type: CInt
    public var isListening: Bool
    public var isConnected: Bool
    /// The local port of a network socket that is neither connected nor listening (0: not
    /// bound), the one kind whose admission as a VoIP socket depends on it (a UDP socket
    /// taking datagrams from anyone must be bound); nil for every other socket, whose port
    /// ``Socket/kind(of:)`` does not read (a `getsockname` for nothing on every TCP and UDP
    /// registration: ``Socket/localPort(_:)`` reads it where it is wanted).
    public var localPort: UInt16?

    /// "tcp", "udp", "unix-stream", "unix-seqpacket", …
    public var name: String {
        switch (domain, type) {
        case (AF_INET, CInt(SOCK_STREAM.rawValue)): return "tcp"
        case (AF_INET6, CInt(SOCK_STREAM.rawValue)): return "tcp6"
        case (AF_INET, CInt(SOCK_DGRAM.rawValue)): return "udp"
        case (AF_INET6, CInt(SOCK_DGRAM.rawValue)): return "udp6"
        case (AF_UNIX, CInt(SOCK_STREAM.rawValue)): return "unix-stream"
        case (AF_UNIX, CInt(SOCK_SEQPACKET.rawValue)): return "unix-seqpacket"
        case (AF_UNIX, CInt(SOCK_DGRAM.rawValue)): return "unix-dgram"
        default: return "domain \(domain) type \(type)"
        }
    }

    /// Whether the socket belongs to a network (IPv4/IPv6) rather than the local machine.
    public var isNetwork: Bool { domain == AF_INET || domain == AF_INET6 }

    /// Whether it is a stream socket (TCP, Unix stream).
    public var isStream: Bool { type == Socket.streamType }

    /// Whether it is a datagram socket (UDP, Unix datagram).
    public var isDatagram: Bool { type == Socket.datagramType }

    /// What it is for, in the words of the kernel's socket tables (``NetworkSocket/Role``):
    /// accepting connections, talking to one peer, or taking datagrams from anyone (a socket
    /// neither listening nor connected).
    public var role: NetworkSocket.Role {
        if isListening { return .listening }
        return isConnected ? .connected : .unconnected
    }
}

/// Socket system calls. Every descriptor made here is close-on-exec.
public enum Socket {
    public static let streamType = CInt(SOCK_STREAM.rawValue)
    public static let seqpacketType = CInt(SOCK_SEQPACKET.rawValue)
    public static let datagramType = CInt(SOCK_DGRAM.rawValue)

    /// `socket(2)` with `SOCK_CLOEXEC` (and `SOCK_NONBLOCK` when asked).
    public static func make(domain: CInt, type: CInt, nonBlocking: Bool = false) throws(Errno) -> FileDescriptor {
        let flags = voipd_SOCK_CLOEXEC | (nonBlocking ? voipd_SOCK_NONBLOCK : 0)
        return FileDescriptor(adopting: try valueOrErrno("socket") { socket(domain, type | flags, 0) })
    }

    /// `socketpair(AF_UNIX)`, both ends close-on-exec.
    public static func pair(type: CInt = streamType) throws(Errno) -> DescriptorPair {
        var fds: [CInt] = [-1, -1]
        _ = try valueOrErrno("socketpair") { socketpair(AF_UNIX, type | voipd_SOCK_CLOEXEC, 0, &fds) }
        return DescriptorPair(first: FileDescriptor(adopting: fds[0]), second: FileDescriptor(adopting: fds[1]))
    }

    public static func withUnixAddress<R>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) throws -> R {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity, !bytes.isEmpty else { throw Errno(ENAMETOOLONG, call: "socket path \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try body(sa, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
    }

    /// Binds and listens on a Unix socket path. A stale socket file (nobody accepting) is
    /// replaced; a live one is an error (EADDRINUSE), so two daemons never share a path.
    public static func listenUnix(path: String, type: CInt = seqpacketType, backlog: CInt = 128, mode: mode_t = 0o666) throws -> FileDescriptor {
        let fd = try make(domain: AF_UNIX, type: type, nonBlocking: true)
        do {
            try withUnixAddress(path) { sa, len in _ = try valueOrErrno("bind(\(path))") { Glibc.bind(fd.rawValue, sa, len) } }
        } catch Errno.addressInUse {
            if (try? connectUnix(path: path, type: type)) != nil { throw Errno(EADDRINUSE, call: "bind(\(path)): another daemon is listening there") }
            try removeFile(path)
            try withUnixAddress(path) { sa, len in _ = try valueOrErrno("bind(\(path))") { Glibc.bind(fd.rawValue, sa, len) } }
        }
        _ = try valueOrErrno("chmod(\(path))") { chmod(path, mode) }
        _ = try valueOrErrno("listen") { Glibc.listen(fd.rawValue, backlog) }
        return fd
    }

    /// Connects to a Unix socket path (blocking connect; the result is blocking).
    public static func connectUnix(path: String, type: CInt = seqpacketType) throws -> FileDescriptor {
        let fd = try make(domain: AF_UNIX, type: type)
        try withUnixAddress(path) { sa, len in
            _ = try valueOrErrno("connect(\(path))") { Glibc.connect(fd.rawValue, sa, len) }
        }
        return fd
    }

    /// The endpoint `host` (a numeric IPv4 or IPv6 address, never a name) and `port` make.
    static func endpoint(host: String, port: UInt16) throws(Errno) -> InetEndpoint {
        guard let address = IPAddress(host) else { throw Errno(EINVAL, call: "\(host) is not a numeric IPv4 or IPv6 address") }
        return InetEndpoint(address: address, port: port)
    }

    /// A TCP listener on an IPv4 or IPv6 address (port 0 picks an ephemeral port; see ``localPort(_:)``).
    public static func listenTCP(host: String = "127.0.0.1", port: UInt16 = 0, backlog: CInt = 128) throws -> FileDescriptor {
        try listenTCP(at: endpoint(host: host, port: port), backlog: backlog)
    }

    /// A TCP listener at `endpoint` with `SO_REUSEADDR` (port 0 picks an ephemeral port).
    public static func listenTCP(at endpoint: InetEndpoint, backlog: CInt = 128, nonBlocking: Bool = false) throws(Errno) -> FileDescriptor {
        let fd = try make(for: endpoint, type: streamType, nonBlocking: nonBlocking)
        try setReuseAddress(fd)
        try bind(fd, to: endpoint)
        try listen(fd, backlog: backlog)
        return fd
    }

    /// A blocking TCP connection to an IPv4 or IPv6 address, with `TCP_NODELAY`.
    public static func connectTCP(host: String, port: UInt16) throws -> FileDescriptor {
        try connectTCP(to: endpoint(host: host, port: port))
    }

    /// A blocking TCP connection to `endpoint`, with `TCP_NODELAY`.
    public static func connectTCP(to endpoint: InetEndpoint) throws(Errno) -> FileDescriptor {
        let fd = try make(for: endpoint, type: streamType)
        _ = try connect(fd, to: endpoint)
        try setNoDelay(fd)
        return fd
    }

    /// Turns Nagle's algorithm off on a TCP socket (`TCP_NODELAY`).
    public static func setNoDelay(_ fd: borrowing FileDescriptor) throws(Errno) {
        try setIntOption(fd, CInt(IPPROTO_TCP), TCP_NODELAY, 1, "setsockopt(TCP_NODELAY)")
    }

    /// The path a Unix socket is bound to (`getsockname`); nil for an unbound or abstract one.
    public static func unixPath(of fd: borrowing FileDescriptor) throws(Errno) -> String? {
        let address = try boundAddress(of: fd, into: sockaddr_un())
        guard address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { raw in String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return path.hasPrefix("/") ? path : nil
    }

    /// `getsockname` into `address`, a `sockaddr_un`, `sockaddr_storage`…
    static func boundAddress<Address>(of fd: borrowing FileDescriptor, into address: Address) throws(Errno) -> Address {
        var address = address
        var length = socklen_t(MemoryLayout<Address>.size)
        _ = try withUnsafeMutablePointer(to: &address) { pointer throws(Errno) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa throws(Errno) in
                try valueOrErrno("getsockname") { getsockname(fd.rawValue, sa, &length) }
            }
        }
        return address
    }

    /// The local port of an IPv4 or IPv6 socket (`getsockname`); 0 for another domain.
    public static func localPort(_ fd: borrowing FileDescriptor) throws(Errno) -> UInt16 {
        try localEndpoint(of: fd)?.port ?? 0
    }

    /// `accept4(SOCK_CLOEXEC)`, and `SOCK_NONBLOCK` for the new connection unless
    /// `nonBlocking` is false. A connection aborted before it was taken is skipped.
    public static func accept(_ listener: borrowing FileDescriptor, nonBlocking: Bool = true) throws(Errno) -> IOResult<FileDescriptor> {
        let flags = voipd_SOCK_CLOEXEC | (nonBlocking ? voipd_SOCK_NONBLOCK : 0)
        while true {
            do {
                return .processed(FileDescriptor(adopting: try valueOrErrno("accept4") { voipd_accept4(listener.rawValue, flags) }))
            } catch .connectionAbort {
                continue
            } catch .wouldBlock {
                return .wouldBlock
            }
        }
    }

    /// `getsockopt(SO_PEERCRED)`.
    public static func peerCredentials(_ fd: borrowing FileDescriptor) throws(Errno) -> PeerCredentials {
        var credentials = voipd_peer_credentials()
        _ = try valueOrErrno("getsockopt(SO_PEERCRED)") { voipd_peer_credentials_get(fd.rawValue, &credentials) }
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
    }

    /// A pidfd for the process at the other end of a Unix socket, whose pid `credentials`
    /// gave. `SO_PEERPIDFD` (Linux 6.5) names the process that connected, even if it has
    /// exited and its pid been reused since; an older kernel falls back to `pidfd_open` of
    /// the pid, which such a reuse could fool.
    public static func peerProcess(_ fd: borrowing FileDescriptor, credentials: PeerCredentials) throws(Errno) -> PidFd {
        do {
            let pinned = try valueOrErrno("getsockopt(SO_PEERPIDFD)") { voipd_peer_pidfd(fd.rawValue) }
            return PidFd(adopting: FileDescriptor(adopting: pinned), pid: credentials.pid)
        } catch .protocolNotAvailable {
            // Only a kernel without the option falls back; any other error (the peer is
            // gone) must not reopen a pid that may now be someone else's.
            return try PidFd(pid: credentials.pid)
        }
    }

    /// `SO_RCVTIMEO`: a blocking receive on `fd` waits at most `timeout` (a whole number of
    /// milliseconds), then fails with `EAGAIN` (``IOResult/wouldBlock``).
    public static func setReceiveTimeout(_ fd: borrowing FileDescriptor, milliseconds: Int) throws(Errno) {
        var value = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        _ = try valueOrErrno("setsockopt(SO_RCVTIMEO)") { setsockopt(fd.rawValue, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size)) }
    }

    static func intOption(_ fd: borrowing FileDescriptor, _ level: CInt, _ name: CInt, _ call: StaticString) throws(Errno) -> CInt {
        var value: CInt = 0
        var length = socklen_t(MemoryLayout<CInt>.size)
        _ = try valueOrErrno("\(call)") { getsockopt(fd.rawValue, level, name, &value, &length) }
        return value
    }

    static func setIntOption(_ fd: borrowing FileDescriptor, _ level: CInt, _ name: CInt, _ value: CInt, _ call: StaticString) throws(Errno) {
        var value = value
        _ = try valueOrErrno("\(call)") { setsockopt(fd.rawValue, level, name, &value, socklen_t(MemoryLayout<CInt>.size)) }
    }

    /// Whether `fd` is a socket at all, and if so what kind (`getsockopt`, `getpeername`).
    /// Nil for a pipe, a file, …
    public static func kind(of fd: borrowing FileDescriptor) throws(Errno) -> SocketKind? {
        // As few calls as tell it (a registration makes them, two for the usual connected
        // socket): anything but a socket answers the first with ENOTSOCK; a connected
        // socket's peer address carries its domain (the family of a socket's addresses is
        // its domain), and it is not listening, nor is a datagram socket; only an unconnected
        // network socket that is not listening has its port read (``SocketKind/localPort``).
        let type: CInt
        do {
            type = try intOption(fd, SOL_SOCKET, SO_TYPE, "getsockopt(SO_TYPE)")
        } catch .notASocket {
            return nil
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let connected = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd.rawValue, $0, &length) == 0 }
        }
        let domain = connected && length >= MemoryLayout<sa_family_t>.size && storage.ss_family != sa_family_t(AF_UNSPEC)
            ? CInt(storage.ss_family)
            : try intOption(fd, SOL_SOCKET, SO_DOMAIN, "getsockopt(SO_DOMAIN)")
        var listening = false
        if !connected && type != datagramType {
            listening = try intOption(fd, SOL_SOCKET, SO_ACCEPTCONN, "getsockopt(SO_ACCEPTCONN)") != 0
        }
        let localPort = !connected && !listening && (domain == AF_INET || domain == AF_INET6) ? try localEndpoint(of: fd)?.port : nil
        return SocketKind(domain: domain, type: type, isListening: listening, isConnected: connected, localPort: localPort)
    }

    /// The inode number of a descriptor (`fstat`): the identity of the socket behind it.
    public static func inode(of fd: borrowing FileDescriptor) throws(Errno) -> UInt64 {
        UInt64(try fileStatus(of: fd).st_ino)
    }

    /// Whether the peer has closed its end (`poll` for `POLLRDHUP`, not waiting), even if
    /// what it sent before has not been read yet.
    public static func peerHasClosed(_ fd: borrowing FileDescriptor) -> Bool {
        var poller = pollfd(fd: fd.rawValue, events: Int16(POLLIN) | voipd_POLLRDHUP, revents: 0)
        guard (try? valueOrErrno("poll") { poll(&poller, 1, 0) }) ?? 0 > 0 else { return false }
        return poller.revents & (voipd_POLLRDHUP | Int16(POLLHUP)) != 0
    }

    /// Bytes waiting to be read (`ioctl(FIONREAD)`); never consumes or peeks data.
    public static func bytesAvailable(_ fd: borrowing FileDescriptor) throws(Errno) -> Int {
        var value: CInt = 0
        _ = try valueOrErrno("ioctl(FIONREAD)") { voipd_ioctl_int(fd.rawValue, voipd_FIONREAD, &value) }
        return Int(value)
    }

    /// `shutdown(SHUT_RDWR)`: ends the connection for every holder of the socket.
    public static func shutdownBoth(_ fd: borrowing FileDescriptor) throws(Errno) {
        _ = try valueOrErrno("shutdown") { Glibc.shutdown(fd.rawValue, CInt(SHUT_RDWR)) }
    }

    /// `connect` to an `AF_UNSPEC` address: a TCP connection is reset for every holder of
    /// the socket (`tcp_disconnect`: the peer gets a RST, what waits in the receive queue is
    /// dropped and its memory freed, and the holders' next read or write fails with
    /// `ECONNRESET`); a datagram socket forgets its peer. Needs no privilege beyond a
    /// descriptor of the socket.
    public static func disconnect(_ fd: borrowing FileDescriptor) throws(Errno) {
        var address = sockaddr()
        address.sa_family = sa_family_t(AF_UNSPEC)
        _ = try valueOrErrno("connect(AF_UNSPEC)") { Glibc.connect(fd.rawValue, &address, socklen_t(MemoryLayout<sockaddr>.size)) }
    }
}

import Glibc

/// A TCP connection the softphone opened: its SIP connection to the registrar or its
/// ordinary presence connection. The object owns the descriptor and closes it when it goes.
///
/// Reads never block (`MSG_DONTWAIT`, after poll() says readable). Writes block, which is
/// harmless for lines and SIP messages that fit in the socket buffer, and keeps the socket
/// itself in blocking mode: voipd holds a duplicate of the SIP socket, and the file status
/// flags are shared with it.
final class TCPConnection {
    enum ReadResult {
        case bytes([UInt8])
        /// Nothing to read now.
        case nothing
        /// End of stream or an error: the connection is unusable.
        case closed(String)
    }

    let fd: Int32
    /// `ip:port` of this end and of the peer, for the log.
    let localAddress: String
    let remoteAddress: String

    /// Takes ownership of a connected socket (one voipd handed back, say).
    init(adopting fd: Int32) {
        self.fd = fd
        localAddress = Self.address(of: fd, peer: false)
        remoteAddress = Self.address(of: fd, peer: true)
    }

    deinit { close(fd) }

    /// Connects to `server`, trying each address it resolves to, each for at most `timeout`.
    static func connect(to server: HostPort, timeout: Duration) throws(NetworkError) -> TCPConnection {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(server.host, String(server.port), &hints, &list)
        guard status == 0, let list else {
            throw NetworkError("resolve \(server.host)", reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(list) }
        var failure = NetworkError("connect \(server)", reason: "no address")
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let address = entry?.pointee {
            entry = address.ai_next
            do throws(NetworkError) {
                return TCPConnection(adopting: try connect(address, timeout: timeout, naming: server))
            } catch {
                failure = error
            }
        }
        throw failure
    }

    // A non-blocking connect bounded by poll(), so an unreachable server costs `timeout` at
    // most; the socket is made blocking again once connected.
    private static func connect(_ address: addrinfo, timeout: Duration, naming server: HostPort) throws(NetworkError) -> Int32 {
        let operation = "connect \(server)"
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let fd = socket(address.ai_family, type, 0)
        guard fd >= 0 else { throw NetworkError("socket") }
        do throws(NetworkError) {
            if Glibc.connect(fd, address.ai_addr, address.ai_addrlen) != 0 {
                guard errno == EINPROGRESS else { throw NetworkError(operation) }
                try waitUntilConnected(fd, timeout: timeout, operation: operation)
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            var yes: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    private static func waitUntilConnected(_ fd: Int32, timeout: Duration, operation: String) throws(NetworkError) {
        let deadline = ContinuousClock.now + timeout
        var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, pollTimeout(until: deadline))
            if ready > 0 { break }
            if ready == 0 { throw NetworkError(operation, reason: "no answer within \(timeout)") }
            if errno != EINTR { throw NetworkError(operation) }
        }
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
        if code != 0 { throw NetworkError(operation, errno: code) }
    }

    /// What is there to read now.
    func read() -> ReadResult {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 { return .bytes(Array(chunk[..<count])) }
            if count == 0 { return .closed("end of stream") }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .nothing
            default: return .closed(String(cString: strerror(errno)))
            }
        }
    }

    /// Writes all of `bytes`.
    func send(_ bytes: [UInt8]) throws(NetworkError) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw NetworkError("send") }
            offset += count
        }
    }

    private static func address(of fd: Int32, peer: Bool) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
        }
        guard status == 0 else { return "?" }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch Int32(storage.ss_family) {
        case AF_INET:
            var address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }
            inet_ntop(AF_INET, &address.sin_addr, &text, socklen_t(text.count))
            return "\(Self.string(text)):\(UInt16(bigEndian: address.sin_port))"
        case AF_INET6:
            var address = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self) }
            inet_ntop(AF_INET6, &address.sin6_addr, &text, socklen_t(text.count))
            return "[\(Self.string(text))]:\(UInt16(bigEndian: address.sin6_port))"
        default:
            return "?"
        }
    }

    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

import CVoipd
import Glibc
import VoipdVocabulary

/// IPv4 and IPv6 sockets: binding, listening, connecting, and the reads and writes of
/// streams and datagrams, each addressed by an ``InetEndpoint``.
extension Socket {
    /// `socket(2)` of `endpoint`'s family (`AF_INET` or `AF_INET6`), close-on-exec.
    public static func make(for endpoint: InetEndpoint, type: CInt, nonBlocking: Bool = false) throws(Errno) -> FileDescriptor {
        try make(domain: endpoint.address.family.domain, type: type, nonBlocking: nonBlocking)
    }

    /// `bind(2)` to an IPv4 or IPv6 address (port 0 for an ephemeral port; see ``localEndpoint(of:)``).
    public static func bind(_ fd: borrowing FileDescriptor, to endpoint: InetEndpoint) throws(Errno) {
        let number = fd.rawValue
        _ = try endpoint.withSocketAddress { address, length throws(Errno) in
            try valueOrErrno("bind(\(endpoint))") { Glibc.bind(number, address, length) }
        }
    }

    /// `listen(2)`.
    public static func listen(_ fd: borrowing FileDescriptor, backlog: CInt) throws(Errno) {
        _ = try valueOrErrno("listen") { Glibc.listen(fd.rawValue, backlog) }
    }

    /// `connect(2)` to an IPv4 or IPv6 address. True when connected; false when a
    /// non-blocking socket's connection is under way (`EINPROGRESS`): wait until it is
    /// writable, then ``checkConnected(_:to:)``. A datagram socket is connected at once.
    public static func connect(_ fd: borrowing FileDescriptor, to endpoint: InetEndpoint) throws(Errno) -> Bool {
        let number = fd.rawValue
        do {
            _ = try endpoint.withSocketAddress { address, length throws(Errno) in
                try valueOrErrno("connect(\(endpoint))") { Glibc.connect(number, address, length) }
            }
            return true
        } catch .inProgress {
            return false
        }
    }

    /// How a non-blocking `connect` to `endpoint` ended (`SO_ERROR`): returns when connected,
    /// throws the connection's error otherwise.
    public static func checkConnected(_ fd: borrowing FileDescriptor, to endpoint: InetEndpoint) throws(Errno) {
        let code = try intOption(fd, SOL_SOCKET, SO_ERROR, "getsockopt(SO_ERROR)")
        if code != 0 { throw Errno(code, call: "connect(\(endpoint))") }
    }

    /// Lets a listener bind an address a previous one left in `TIME_WAIT` (`SO_REUSEADDR`).
    public static func setReuseAddress(_ fd: borrowing FileDescriptor) throws(Errno) {
        try setIntOption(fd, SOL_SOCKET, SO_REUSEADDR, 1, "setsockopt(SO_REUSEADDR)")
    }

    /// The address of a connected network socket's peer (`getpeername`); nil for a socket of
    /// another domain. `ENOTCONN` when it has none.
    public static func peerEndpoint(of fd: borrowing FileDescriptor) throws(Errno) -> InetEndpoint? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let number = fd.rawValue
        _ = try withUnsafeMutablePointer(to: &storage) { pointer throws(Errno) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(Errno) in
                try valueOrErrno("getpeername") { getpeername(number, address, &length) }
            }
        }
        return InetEndpoint(storage, length: length)
    }

    /// `send(2)` on a connected socket with `MSG_NOSIGNAL` (a vanished peer is `EPIPE`, not
    /// a SIGPIPE): the bytes the kernel took, perhaps fewer than given. A blocking socket
    /// waits for room; a non-blocking one says ``IOResult/wouldBlock`` when it has none.
    public static func send(_ fd: borrowing FileDescriptor, some bytes: UnsafeRawBufferPointer) throws(Errno) -> IOResult<Int> {
        do {
            return .processed(try valueOrErrno("send") { Glibc.send(fd.rawValue, bytes.baseAddress, bytes.count, voipd_MSG_NOSIGNAL) })
        } catch .wouldBlock {
            return .wouldBlock
        }
    }

    /// All of `bytes` on a blocking connected socket (``send(_:some:)`` until done).
    public static func sendAll(_ fd: borrowing FileDescriptor, _ bytes: [UInt8]) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            let outcome = bytes.withUnsafeBytes { whole in
                Result { () throws(Errno) in try send(fd, some: UnsafeRawBufferPointer(rebasing: whole[offset...])) }
            }
            guard case .processed(let count) = try outcome.get() else { throw Errno(EAGAIN, call: "send: a non-blocking socket is full") }
            offset += count
        }
    }

    /// `recv(2)` of what a connected socket has, at most `buffer.count` bytes: 0 at the end
    /// of the stream. With `waiting` false (`MSG_DONTWAIT`) it never blocks, whatever the
    /// socket's own mode, and says ``IOResult/wouldBlock`` when nothing is there.
    public static func receive(_ fd: borrowing FileDescriptor, into buffer: UnsafeMutableRawBufferPointer, waiting: Bool = false) throws(Errno) -> IOResult<Int> {
        do {
            return .processed(try valueOrErrno("recv") { recv(fd.rawValue, buffer.baseAddress, buffer.count, waiting ? 0 : CInt(MSG_DONTWAIT)) })
        } catch .wouldBlock {
            return .wouldBlock
        }
    }

    /// One datagram to `destination` (`sendto(2)`, `MSG_NOSIGNAL`). A datagram the kernel
    /// would have to cut is `EMSGSIZE`.
    public static func sendDatagram(_ fd: borrowing FileDescriptor, _ bytes: [UInt8], to destination: InetEndpoint) throws(Errno) {
        let number = fd.rawValue
        let outcome = bytes.withUnsafeBytes { buffer in
            Result { () throws(Errno) in
                try destination.withSocketAddress { address, length throws(Errno) in
                    try valueOrErrno("sendto(\(destination))") { sendto(number, buffer.baseAddress, buffer.count, voipd_MSG_NOSIGNAL, address, length) }
                }
            }
        }
        _ = try outcome.get()
    }

    /// A datagram received, and who sent it.
    public struct Datagram {
        /// Its whole length, which is more than the buffer took when it was cut short.
        public var length: Int
        /// Its sender; nil for a family other than IPv4 and IPv6.
        public var sender: InetEndpoint?
    }

    /// The next datagram waiting, without blocking (`recvfrom(2)` with `MSG_DONTWAIT` and
    /// `MSG_TRUNC`, so that a datagram longer than `buffer` says its real length).
    /// ``IOResult/wouldBlock`` when none is waiting.
    public static func receiveDatagram(_ fd: borrowing FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> IOResult<Datagram> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let number = fd.rawValue
        let count: Int
        do {
            count = try withUnsafeMutablePointer(to: &storage) { pointer throws(Errno) in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(Errno) in
                    try valueOrErrno("recvfrom") { recvfrom(number, buffer.baseAddress, buffer.count, CInt(MSG_DONTWAIT) | CInt(MSG_TRUNC), address, &length) }
                }
            }
        } catch .wouldBlock {
            return .wouldBlock
        }
        return .processed(Datagram(length: count, sender: InetEndpoint(storage, length: length)))
    }

    /// The addresses `host` resolves to for sockets of `type` (`getaddrinfo(3)`), in the
    /// order the resolver gives; a numeric address is returned as it is, without a look-up.
    public static func resolve(host: String, port: UInt16, type: CInt) throws(AddressResolutionError) -> [InetEndpoint] {
        var bare = host
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = String(bare.dropFirst().dropLast()) }
        if let address = IPAddress(bare) { return [InetEndpoint(address: address, port: port)] }
        var hints = addrinfo()
        hints.ai_socktype = type
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(bare, String(port), &hints, &list)
        guard status == 0, let list else { throw AddressResolutionError(host: host, reason: String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var found: [InetEndpoint] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let info = entry?.pointee {
            entry = info.ai_next
            guard let address = info.ai_addr else { continue }
            if let endpoint = InetEndpoint(address, length: info.ai_addrlen), !found.contains(endpoint) { found.append(endpoint) }
        }
        guard !found.isEmpty else { throw AddressResolutionError(host: host, reason: "no IPv4 or IPv6 address") }
        return found
    }
}

/// A host name that did not resolve (`getaddrinfo(3)`'s own codes are not errno values).
public struct AddressResolutionError: Error, Sendable, CustomStringConvertible {
    public var host: String
    /// What the resolver said (`gai_strerror`).
    public var reason: String

    public var description: String { "resolve \(host): \(reason)" }
}

extension IPAddress.Family {
    /// `AF_INET` or `AF_INET6`.
    var domain: CInt { self == .ipv4 ? AF_INET : AF_INET6 }
}

extension InetEndpoint {
    /// Reads a `sockaddr_in` or `sockaddr_in6`; nil for another family or a short one.
    init?(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        let raw = UnsafeRawPointer(address)
        switch CInt(address.pointee.sa_family) {
        case AF_INET where Int(length) >= MemoryLayout<sockaddr_in>.size:
            let v4 = raw.loadUnaligned(as: sockaddr_in.self)
            self.init(address: IPAddress(bytes: withUnsafeBytes(of: v4.sin_addr) { Array($0) })!, port: UInt16(bigEndian: v4.sin_port))
        case AF_INET6 where Int(length) >= MemoryLayout<sockaddr_in6>.size:
            let v6 = raw.loadUnaligned(as: sockaddr_in6.self)
            self.init(address: IPAddress(bytes: withUnsafeBytes(of: v6.sin6_addr) { Array($0) })!, port: UInt16(bigEndian: v6.sin6_port))
        default:
            return nil
        }
    }

    /// Reads what `getsockname`, `getpeername` or `recvfrom` wrote into `storage`.
    init?(_ storage: sockaddr_storage, length: socklen_t) {
        var storage = storage
        let endpoint = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { InetEndpoint($0, length: length) }
        }
        guard let endpoint else { return nil }
        self = endpoint
    }

    /// Calls `body` with this endpoint as a `sockaddr_in` or `sockaddr_in6`, and its length.
    func withSocketAddress<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        switch address.family {
        case .ipv4: try with(sockaddr_in(), family: \.sin_family, port: \.sin_port, address: \.sin_addr, body)
        case .ipv6: try with(sockaddr_in6(), family: \.sin6_family, port: \.sin6_port, address: \.sin6_addr, body)
        }
    }

    /// `empty`, a `sockaddr_in` or `sockaddr_in6`, filled with this endpoint and passed as
    /// the generic `sockaddr` the calls take.
    private func with<Address, Bytes, Result, Failure: Error>(
        _ empty: Address, family: WritableKeyPath<Address, sa_family_t>, port portField: WritableKeyPath<Address, in_port_t>,
        address addressField: WritableKeyPath<Address, Bytes>, _ body: (UnsafePointer<sockaddr>, socklen_t) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        var filled = empty
        filled[keyPath: family] = sa_family_t(address.family.domain)
        filled[keyPath: portField] = port.bigEndian
        withUnsafeMutableBytes(of: &filled[keyPath: addressField]) { $0.copyBytes(from: address.bytes) }
        return try withUnsafePointer(to: &filled) { pointer throws(Failure) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic throws(Failure) in
                try body(generic, socklen_t(MemoryLayout<Address>.size))
            }
        }
    }
}

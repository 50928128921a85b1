import Glibc
import SIP
import VoipdSystem

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

    let descriptor: FileDescriptor
    var fd: Int32 { descriptor.rawValue }
    /// `ip:port` of this end and of the peer, for the log.
    let localAddress: String
    let remoteAddress: String

    /// Takes ownership of a connected socket.
    init(descriptor: consuming FileDescriptor) {
        localAddress = Self.address(of: descriptor, peer: false)
        remoteAddress = Self.address(of: descriptor, peer: true)
        self.descriptor = descriptor
    }

    /// Takes ownership of a connected socket voipd handed back.
    convenience init(adopting fd: Int32) {
        self.init(descriptor: FileDescriptor(adopting: fd))
    }

    /// Connects to `server`, trying each address it resolves to, each for at most `timeout`.
    static func connect(to server: HostPort, timeout: Duration) throws(NetworkError) -> TCPConnection {
        let endpoints: [SIPSocketAddress]
        do {
            endpoints = try Socket.resolve(host: server.host, port: server.port, type: Socket.streamType)
        } catch {
            throw NetworkError("resolve \(server.host)", reason: error.reason)
        }
        var failure = NetworkError("connect \(server)", reason: "no address")
        for endpoint in endpoints {
            do throws(NetworkError) {
                return TCPConnection(descriptor: try connect(to: endpoint, timeout: timeout, naming: server))
            } catch {
                failure = error
            }
        }
        throw failure
    }

    // A non-blocking connect bounded by poll(), so an unreachable server costs `timeout` at
    // most; the socket is made blocking again once connected.
    private static func connect(to endpoint: SIPSocketAddress, timeout: Duration, naming server: HostPort) throws(NetworkError) -> FileDescriptor {
        let operation = "connect \(server)"
        func attempt<Value: ~Copyable>(_ body: () throws(Errno) -> Value) throws(NetworkError) -> Value {
            do {
                return try body()
            } catch {
                throw NetworkError(operation, reason: Errno(error.rawValue).description)
            }
        }
        let connection = try attempt { () throws(Errno) in try Socket.make(for: endpoint, type: Socket.streamType, nonBlocking: true) }
        if try !attempt({ () throws(Errno) in try Socket.connect(connection, to: endpoint) }) {
            guard try attempt({ () throws(Errno) in try waitWritable(connection, until: ContinuousClock.now + timeout) }) else {
                throw NetworkError(operation, reason: "no answer within \(timeout)")
            }
            try attempt { () throws(Errno) in try Socket.checkConnected(connection, to: endpoint) }
        }
        try attempt { () throws(Errno) in
            try connection.setNonBlocking(false)
            try Socket.setNoDelay(connection)
        }
        return connection
    }

    /// Whether `descriptor` became writable before `deadline`.
    private static func waitWritable(_ descriptor: borrowing FileDescriptor, until deadline: ContinuousClock.Instant) throws(Errno) -> Bool {
        var watched = [pollfd(fd: descriptor.rawValue, events: Int16(POLLOUT), revents: 0)]
        repeat {
            if try poll(&watched, timeoutMilliseconds: pollTimeout(until: deadline)) > 0 { return true }
        } while ContinuousClock.now < deadline
        return false
    }

    /// What is there to read now.
    func read() -> ReadResult {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        do throws(Errno) {
            let received = chunk.withUnsafeMutableBytes { bytes in
                Result { () throws(Errno) in try Socket.receive(descriptor, into: bytes) }
            }
            switch try received.get() {
            case .wouldBlock: return .nothing
            case .processed(0): return .closed("end of stream")
            case .processed(let count): return .bytes(Array(chunk[..<count]))
            }
        } catch {
            return .closed(Errno(error.rawValue).description)
        }
    }

    /// Writes all of `bytes`.
    func send(_ bytes: [UInt8]) throws(NetworkError) {
        do throws(Errno) {
            try Socket.sendAll(descriptor, bytes)
        } catch {
            throw NetworkError(error)
        }
    }

    private static func address(of descriptor: borrowing FileDescriptor, peer: Bool) -> String {
        do {
            let endpoint = peer ? try Socket.peerEndpoint(of: descriptor) : try Socket.localEndpoint(of: descriptor)
            return endpoint?.description ?? "?"
        } catch {
            return "?"
        }
    }
}

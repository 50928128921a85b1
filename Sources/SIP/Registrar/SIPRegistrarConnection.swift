#if canImport(Glibc)
import Glibc
#endif

/// One accepted TCP connection: its descriptor, the framer for what it sends us, and what
/// we still have to write to it.
final class SIPRegistrarConnection {
    enum ReadOutcome {
        case data
        case wouldBlock
        case closed(String)
    }

    let id: Int
    let fd: Int32
    let peer: String
    var framer: SIPStreamFramer
    private var outgoing: [UInt8] = []

    init(id: Int, fd: Int32, maximumMessageSize: Int) {
        self.id = id
        self.fd = fd
        self.peer = SIPSocket.peerName(fd)
        self.framer = SIPStreamFramer(maximumMessageSize: maximumMessageSize)
    }

    var wantsToWrite: Bool { !outgoing.isEmpty }

    /// Reads what is available into the framer.
    func read() -> ReadOutcome {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            framer.append(chunk[..<count])
            return .data
        }
        if count == 0 { return .closed("peer closed the connection") }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .wouldBlock }
        return .closed(SIPSocketError("recv").description)
    }

    /// Queues bytes and writes as much as the socket takes; nil, or why the connection failed.
    func send(_ bytes: [UInt8]) -> String? {
        outgoing += bytes
        return flush()
    }

    /// Writes queued bytes until the socket would block; nil, or why the connection failed.
    func flush() -> String? {
        while !outgoing.isEmpty {
            let count = outgoing.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count > 0 {
                outgoing.removeFirst(count)
            } else if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                return nil
            } else {
                return SIPSocketError("send").description
            }
        }
        return nil
    }

    func close() {
        _ = Glibc.close(fd)
    }
}

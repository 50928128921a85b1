import Glibc
import SIP
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// The bench's side of the calls: one TCP connection to the registrar, opened once and
/// reused by every call (so that no timed call pays for a connection set-up). Bytes are
/// read raw into `unframed` and cut into SIP messages by `SIPStreamFramer` only when
/// messages are asked for: while a call is timed, the caller (woken first by the
/// registrar's 100 Trying) does as little as it can on CPUs it shares with the callee.
final class CallerConnection {
    private let descriptor: FileDescriptor
    private var unframed: [UInt8] = []
    private var framer = SIPStreamFramer()
    private var framed: [SIPMessage] = []
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)

    init(host: String, port: UInt16) throws {
        descriptor = try Socket.connectTCP(host: host, port: port)
    }

    deinit { buffer.deallocate() }

    /// Writes all of `bytes`; `MSG_NOSIGNAL`, so a registrar that died is an error, not a SIGPIPE.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor.rawValue, $0.baseAddress, $0.count, CInt(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { throw Errno.current("send(to the registrar)") }
            offset += sent
        }
    }

    /// Reads, without parsing, until the bytes not framed yet contain `marker`; the
    /// `CLOCK_MONOTONIC` time (ns) at which the read that brought it returned.
    func readUntil(_ marker: [UInt8], before deadline: MonotonicInstant, waitingFor what: String) throws -> UInt64 {
        var searchedUpTo = 0
        while true {
            let readAt = try readOnce(before: deadline, waitingFor: what)
            // Only where the marker can end in the new bytes.
            let start = max(0, searchedUpTo - marker.count + 1)
            if unframed.count >= marker.count,
               (start...(unframed.count - marker.count)).contains(where: { unframed[$0..<($0 + marker.count)].elementsEqual(marker) }) {
                return readAt
            }
            searchedUpTo = unframed.count
        }
    }

    /// The next message, framed from what was read (reading more if needed); throws once
    /// `deadline` passes, saying it was waiting for `what`.
    func next(before deadline: MonotonicInstant, waitingFor what: @autoclosure () -> String) throws -> SIPMessage {
        while true {
            try frameUnframed()
            if !framed.isEmpty { return framed.removeFirst() }
            _ = try readOnce(before: deadline, waitingFor: what())
        }
    }

    /// Waits until readable and reads what is there into `unframed`; the time the read returned.
    private func readOnce(before deadline: MonotonicInstant, waitingFor what: String) throws -> UInt64 {
        while true {
            guard MonotonicInstant.now < deadline, try waitReadable(descriptor.rawValue, until: deadline) else {
                throw BenchError("no \(what) from the registrar in time")
            }
            let count = recv(descriptor.rawValue, buffer.baseAddress, buffer.count, CInt(MSG_DONTWAIT))
            // Taken before anything else: the read returning is what is timed.
            let readAt = MonotonicInstant.now.nanoseconds
            if count < 0 {
                guard errno == EAGAIN || errno == EINTR else { throw Errno.current("recv(from the registrar)") }
                continue
            }
            guard count > 0 else { throw BenchError("the registrar closed the caller's connection") }
            unframed.append(contentsOf: buffer[..<count])
            return readAt
        }
    }

    private func frameUnframed() throws {
        guard !unframed.isEmpty else { return }
        framer.append(unframed)
        unframed.removeAll(keepingCapacity: true)
        while let item = try framer.next() {
            switch item {
            case .message(let message): framed.append(message)
            // RFC 5626 3.5.1: a CRLF pong answers a double-CRLF ping.
            case .keepAlivePing: try send(Array("\r\n".utf8))
            case .keepAlivePong: break
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
@testable import SIP
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// A blocking TCP connection to 127.0.0.1 that reads framed SIP messages with poll() deadlines.
final class TestConnection {
    /// Nil once closed.
    private var descriptor: FileDescriptor?
    var fd: Int32 {
        switch descriptor {
        case .some(let descriptor): descriptor.rawValue
        case .none: -1
        }
    }
    private var framer = SIPStreamFramer()
    private var queue: [SIPStreamItem] = []
    private(set) var isOpen = true

    init(port: UInt16) throws {
        descriptor = try SIPSocket.connect(host: "127.0.0.1", port: port)
    }

    func localPort() throws -> UInt16 {
        switch descriptor {
        case .some(let descriptor): try Socket.localPort(descriptor)
        case .none: throw TestFailure("the connection is closed")
        }
    }

    func send(_ message: SIPMessage) throws { try sendBytes(message.serialized()) }

    func sendBytes(_ bytes: [UInt8]) throws {
        switch descriptor {
        case .some(let descriptor): try Socket.sendAll(descriptor, bytes)
        case .none: throw TestFailure("the connection is closed")
        }
    }

    /// Reads once (call after poll() said readable) and queues the complete items; marks
    /// the connection closed at end of stream.
    func readAvailable() throws {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else {
            isOpen = false
            return
        }
        framer.append(chunk[..<count])
        while let item = try framer.next() { queue.append(item) }
    }

    /// Takes the queued items.
    func takeItems() -> [SIPStreamItem] {
        defer { queue.removeAll() }
        return queue
    }

    /// The next item, waiting at most `timeout`.
    func receiveItem(within timeout: Duration = .seconds(5)) throws -> SIPStreamItem {
        let deadline = ContinuousClock.now + timeout
        while queue.isEmpty {
            guard isOpen else { throw TestFailure("connection closed while waiting for a message") }
            try waitReadable(fd, until: deadline)
            try readAvailable()
        }
        return queue.removeFirst()
    }

    /// The next message (skipping keep-alives), waiting at most `timeout`.
    func receive(within timeout: Duration = .seconds(5)) throws -> SIPMessage {
        let deadline = ContinuousClock.now + timeout
        while true {
            if case .message(let message) = try receiveItem(within: deadline - .now) { return message }
        }
    }

    /// Waits until the peer closes the connection.
    func waitForClose(within timeout: Duration = .seconds(5)) throws {
        let deadline = ContinuousClock.now + timeout
        while isOpen {
            try waitReadable(fd, until: deadline)
            try readAvailable()
        }
    }

    func close() {
        isOpen = false
        descriptor = nil
    }
}

/// Waits for `fd` to become readable, or throws when `deadline` passes.
func waitReadable(_ fd: Int32, until deadline: ContinuousClock.Instant) throws {
    guard try VoipdTestSupport.waitReadable(fd, until: MonotonicInstant.now + (deadline - ContinuousClock.now)) else {
        throw TestFailure("timed out waiting for data on fd \(fd)")
    }
}

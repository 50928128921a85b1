import Foundation
import Glibc
import VoipdSystem
import VoipdTestSupport

/// An HTTP server on loopback that answers every connection with one fixed response, read
/// request or not, as a hostile server may, and then, if asked, with that many zero bytes as
/// fast as the connection takes them; on a thread of its own until ``stop()``.
final class FixedResponseServer: @unchecked Sendable {
    let port: UInt16
    private let listener: FileDescriptor
    private let response: [UInt8]
    private let zeros: Int
    private let state = NSCondition()
    private var stopping = false
    private var serving = true
    private var sent = 0
    private var connections = 0

    init(response: [UInt8], thenZeros zeros: Int = 0) throws {
        listener = try Socket.listenTCP()
        port = try Socket.localPort(listener)
        self.response = response
        self.zeros = zeros
        Thread.detachNewThread { [self] in serve() }
    }

    /// Ends the thread and waits for it.
    func stop() {
        state.lock()
        stopping = true
        while serving { state.wait() }
        state.unlock()
    }

    /// The zero bytes sent so far, over every connection.
    var zerosSent: Int {
        state.lock()
        defer { state.unlock() }
        return sent
    }

    /// The connections accepted so far.
    var accepted: Int {
        state.lock()
        defer { state.unlock() }
        return connections
    }

    private var isStopping: Bool {
        state.lock()
        defer { state.unlock() }
        return stopping
    }

    private func serve() {
        while !isStopping {
            guard (try? waitReadable(listener, timeoutMilliseconds: 100)) == true else { continue }
            try? answerOne()
        }
        state.lock()
        serving = false
        state.broadcast()
        state.unlock()
    }

    /// Accepts a connection, reads the request's head (up to its blank line) and answers,
    /// until the zeros are sent, the client has gone, or the server stops.
    private func answerOne() throws {
        guard case .processed(let connection) = try Socket.accept(listener, nonBlocking: false) else { return }
        state.lock()
        connections += 1
        state.unlock()
        var request: [UInt8] = []
        let end = Array("\r\n\r\n".utf8)
        while !(request.count >= end.count && Array(request.suffix(end.count)) == end), try waitReadable(connection, timeoutMilliseconds: 5000) {
            let chunk = try connection.read(upTo: 4096)
            if chunk.isEmpty { break }
            request += chunk
        }
        try Socket.sendAll(connection, response)
        // Non-blocking from here, so that a client that stops reading never holds up stop().
        try connection.setNonBlocking()
        let chunk = [UInt8](repeating: 0, count: 1 << 20)
        var left = zeros
        while left > 0 {
            var writable = [pollfd(fd: connection.rawValue, events: Int16(POLLOUT), revents: 0)]
            guard !isStopping else { return }
            guard try poll(&writable, timeoutMilliseconds: 100) > 0 else { continue }
            let outcome = chunk.withUnsafeBytes { raw in
                Result { () throws(Errno) in try Socket.send(connection, some: UnsafeRawBufferPointer(rebasing: raw.prefix(left))) }
            }
            guard case .processed(let count) = try outcome.get() else { continue }
            left -= count
            state.lock()
            sent += count
            state.unlock()
        }
    }
}

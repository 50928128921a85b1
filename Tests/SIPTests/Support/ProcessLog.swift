#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Collects what a child process writes to a pipe, on a thread of its own (a full pipe would
/// block the child), and lets a test wait for a line to appear.
final class ProcessLog: @unchecked Sendable {
    // `text` and `ended` are guarded by `condition`.
    private let condition = NSCondition()
    private var text = ""
    private var ended = false
    private let fd: Int32

    /// Starts reading `fd` (the read end of the child's stderr pipe) until end of file; the
    /// log owns and closes `fd`.
    init(reading fd: Int32) {
        self.fd = fd
        let thread = Thread { [self] in readUntilEnd() }
        thread.start()
    }

    var contents: String {
        condition.lock()
        defer { condition.unlock() }
        return text
    }

    /// Waits until the log contains `needle`; false if the pipe ends or `deadline` passes first.
    func waitFor(_ needle: String, until deadline: ContinuousClock.Instant) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !text.contains(needle) {
            guard !ended, wait(until: deadline) else { return text.contains(needle) }
        }
        return true
    }

    /// Waits until every writer has closed the pipe; false if `deadline` passes first.
    func waitForEnd(until deadline: ContinuousClock.Instant) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !ended {
            guard wait(until: deadline) else { return ended }
        }
        return true
    }

    private func wait(until deadline: ContinuousClock.Instant) -> Bool {
        let remaining = deadline - .now
        guard remaining > .zero else { return false }
        let seconds = Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18
        return condition.wait(until: Date(timeIntervalSinceNow: seconds))
    }

    private func readUntilEnd() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            condition.lock()
            if count > 0 {
                text += String(decoding: chunk[..<count], as: UTF8.self)
            } else {
                ended = true
            }
            condition.broadcast()
            condition.unlock()
            if count <= 0 { break }
        }
        close(fd)
    }
}

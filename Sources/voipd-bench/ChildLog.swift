import Glibc
import VoipdSystem
import VoipdVocabulary

/// A child's log on a pipe to the bench, line by line, keeping its last lines for a
/// failure message. The bench reads it only between calls (``drain()``): nothing else
/// reads the pipe, and a full pipe would block the child in its next log line.
final class ChildLog {
    private let reader: LineReader
    private var recent: [String] = []
    private static let kept = 30

    init(_ readEnd: consuming FileDescriptor) {
        reader = LineReader(readEnd)
    }

    /// Reads lines until one contains `text`; throws once `milliseconds` have passed, or if
    /// the log ends.
    func waitForLine(containing text: String, milliseconds: Int32) throws {
        let deadline = MonotonicInstant.now + .milliseconds(milliseconds)
        do {
            while MonotonicInstant.now < deadline, let line = try reader.next(timeoutMilliseconds: pollTimeout(until: deadline)) {
                keep(line)
                if line.contains(text) { return }
            }
        } catch is BenchError {
            // The only one LineReader throws: end of file, every writer gone.
            throw BenchError("its log ended (it exited) before \"\(text)\"")
        }
        throw BenchError("no \"\(text)\" within \(milliseconds) ms")
    }

    /// Reads lines until one satisfies `matches`, and returns it; nil once the process behind
    /// the pidfd `process` has ended and every line it wrote has been read. Throws once
    /// `milliseconds` have passed. For a child that keeps the log open after it ends (the
    /// bench holds a FIFO's both ends), where the log's end never comes.
    func waitForLine(milliseconds: Int32, whileRunning process: borrowing FileDescriptor, _ matches: (String) -> Bool) throws -> String? {
        let deadline = MonotonicInstant.now + .milliseconds(milliseconds)
        var watched = [pollfd(fd: reader.descriptor.rawValue, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: process.rawValue, events: Int16(POLLIN), revents: 0)]
        while true {
            while let line = try reader.next(timeoutMilliseconds: 0) {
                keep(line)
                if matches(line) { return line }
            }
            // Seen ended by the last poll, and what it wrote before is read.
            if watched[1].revents != 0 { return nil }
            guard MonotonicInstant.now < deadline else { throw BenchError("no line awaited within \(milliseconds) ms") }
            for index in watched.indices { watched[index].revents = 0 }
            _ = try poll(&watched, timeoutMilliseconds: pollTimeout(until: deadline))
        }
    }

    /// Reads what was logged so far without waiting; returns those lines.
    @discardableResult
    func drain() throws -> [String] {
        var lines: [String] = []
        while let line = try reader.next(timeoutMilliseconds: 0) {
            keep(line)
            lines.append(line)
        }
        return lines
    }

    /// The last lines read, indented.
    var tail: String { recent.map { "  " + $0 }.joined(separator: "\n") }

    private func keep(_ line: String) {
        recent.append(line)
        if recent.count > Self.kept { recent.removeFirst(recent.count - Self.kept) }
    }
}

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

    /// Reads what was logged so far without waiting.
    func drain() throws {
        while let line = try reader.next(timeoutMilliseconds: 0) { keep(line) }
    }

    /// The last lines read, indented.
    var tail: String { recent.map { "  " + $0 }.joined(separator: "\n") }

    private func keep(_ line: String) {
        recent.append(line)
        if recent.count > Self.kept { recent.removeFirst(recent.count - Self.kept) }
    }
}

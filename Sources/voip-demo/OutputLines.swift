import Glibc
import VoipdSystem

/// One line a process wrote, with its time: the timestamp the line starts with, or when the
/// demo read it.
struct LoggedLine {
    let time: Double
    let text: String
}

/// The read end of a pipe that a process writes its log to, cut into lines.
final class OutputLines: EventSource {
    let name: String
    private let pipe: FileDescriptor
    private var partial: [UInt8] = []
    private(set) var lines: [LoggedLine] = []
    /// Every writer closed its end: for a child with no children of its own, it has exited.
    private(set) var ended = false

    /// Takes the read end of a pipe.
    init(name: String, reading pipe: consuming FileDescriptor) {
        self.name = name
        self.pipe = pipe
    }

    var descriptors: [Int32] { ended ? [] : [pipe.rawValue] }

    func service(_ fd: Int32) throws {
        let bytes = try pipe.read(upTo: 65_536)
        guard !bytes.isEmpty else {
            ended = true
            if !partial.isEmpty { append(partial) }
            return
        }
        partial += bytes
        while let newline = partial.firstIndex(of: 0x0A) {
            append(Array(partial[..<newline]))
            partial.removeSubrange(...newline)
        }
    }

    /// Reads whatever is already in the pipe, without waiting for more.
    func drain() throws {
        var descriptor = pollfd(fd: pipe.rawValue, events: Int16(POLLIN), revents: 0)
        while !ended, poll(&descriptor, 1, 0) > 0 { try service(pipe.rawValue) }
    }

    /// The lines that contain `text`, at or after `time`.
    func lines(containing text: String, since time: Double = 0) -> [LoggedLine] {
        lines.filter { $0.time >= time && $0.text.contains(text) }
    }

    private func append(_ bytes: [UInt8]) {
        let line = String(decoding: bytes, as: UTF8.self)
        if let space = line.firstIndex(of: " "), let time = WallClock.parse(line[..<space]) {
            lines.append(LoggedLine(time: time, text: String(line[line.index(after: space)...])))
        } else {
            lines.append(LoggedLine(time: WallClock.now, text: line))
        }
    }
}

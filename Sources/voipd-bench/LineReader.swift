import Glibc
import VoipdSystem
import VoipdTestSupport
import VoipdVocabulary

/// Whole lines from a pipe, with a time limit on each wait.
final class LineReader {
    let descriptor: FileDescriptor
    private var buffer: [UInt8] = []

    init(_ descriptor: consuming FileDescriptor) {
        self.descriptor = descriptor
    }

    /// The next line (without its newline), or nil when none came within the timeout.
    /// Throws at end of file.
    func next(timeoutMilliseconds: Int32) throws -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0a) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            guard try waitReadable(descriptor.rawValue, until: MonotonicInstant.now + .milliseconds(timeoutMilliseconds)) else { return nil }
            let bytes = try descriptor.read(upTo: 65536)
            guard !bytes.isEmpty else { throw BenchError("the report pipe closed") }
            buffer += bytes
        }
    }
}

import Foundation
import Glibc

/// The softphone's log on standard output: one line per SIP message, lifecycle event and
/// connection change, `TIMESTAMP CATEGORY: TEXT`. The timestamp is UTC to the microsecond
/// (`2025-06-10T12:34:56.123456Z`), so that lines of several processes on one machine merge
/// into one timeline.
enum Log {
    /// Writes one line, stamped now or at `time` (a ``timestamp()`` taken earlier: a message
    /// is stamped before it is sent, so that a late line does not make it look late).
    static func write(_ category: String, _ text: String, at time: String? = nil) {
        let line = Array("\(time ?? timestamp()) \(category): \(text)\n".utf8)
        // One write(2) per line, no stdio buffer: a line is out before the process can be
        // stopped, and lines never interleave with other writers of the same file.
        var offset = 0
        while offset < line.count {
            let written = line[offset...].withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// Now, as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, Int32(now.tv_nsec / 1000))
    }
}

import Foundation
import Glibc

/// Times on the wall clock, in seconds since the epoch: the one clock that voipd's
/// transitions, the softphone's log lines and the demo's own observations share.
enum WallClock {
    static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Reads the softphone's timestamps, `2025-06-10T12:34:56.123456Z` (UTC).
    static func parse(_ text: Substring) -> Double? {
        let fields = text.split(whereSeparator: { "-T:.Z".contains($0) })
        guard text.hasSuffix("Z"), fields.count == 7, let microseconds = Double(fields[6]) else { return nil }
        let numbers = fields.prefix(6).compactMap { Int32($0) }
        guard numbers.count == 6 else { return nil }
        var parts = tm()
        parts.tm_year = numbers[0] - 1900
        parts.tm_mon = numbers[1] - 1
        parts.tm_mday = numbers[2]
        parts.tm_hour = numbers[3]
        parts.tm_min = numbers[4]
        parts.tm_sec = numbers[5]
        return Double(timegm(&parts)) + microseconds / 1e6
    }

    /// A duration between two wall-clock times, in milliseconds, for people.
    static func milliseconds(from start: Double, to end: Double) -> String {
        String(format: "%.3f ms", (end - start) * 1000)
    }
}

import Glibc
import VoipdConfiguration

/// One line per event on stderr, with a syslog priority prefix. Each call site is rate
/// limited (``LogRateLimiter``): a flood of the same line becomes a count.
public struct Logger: Sendable {
    public var level: LogLevel
    private let limiter: LogRateLimiter

    public init(level: LogLevel) {
        self.level = level
        limiter = LogRateLimiter()
    }

    public func log(_ priority: LogLevel, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
        guard priority <= level else { return }
        let (admitted, summaries) = limiter.admit(file: file, line: line)
        for summary in summaries { write(.notice, summary) }
        if admitted { write(priority, message()) }
    }

    private func write(_ priority: LogLevel, _ message: String) {
        // One write(2) per line: lines from several processes sharing stderr never interleave.
        var bytes = Self.line(priority, message)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// The line ``log(_:_:file:line:)`` writes for `message`: the priority prefix, the message
    /// with its control characters escaped (`\n`, `\x1b`, `\u{85}`), and one newline.
    /// Messages quote what clients send (names, values a decoder refused); escaped, a
    /// client's newline cannot start a line of its own with a priority of its choosing, nor
    /// its escape sequences reach a terminal.
    public static func line(_ priority: LogLevel, _ message: String) -> [UInt8] {
        var line = Array("<\(priority.rawValue)>".utf8)
        line.reserveCapacity(line.count + message.utf8.count + 1)
        // Nothing to escape unless a byte is a C0 control, DEL, or leads a C1 control (0xc2)
        // or a separator (0xe2).
        guard message.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f || $0 == 0xc2 || $0 == 0xe2 }) else {
            line.append(contentsOf: message.utf8)
            line.append(UInt8(ascii: "\n"))
            return line
        }
        for scalar in message.unicodeScalars {
            switch scalar.value {
            case 0x0a: line.append(contentsOf: #"\n"#.utf8)
            case 0x0d: line.append(contentsOf: #"\r"#.utf8)
            case 0x09: line.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20, 0x7f: line.append(contentsOf: "\\x\(hex(scalar.value))".utf8)
            // C1 controls (NEL, CSI…) and the Unicode line and paragraph separators.
            case 0x80...0x9f, 0x2028, 0x2029: line.append(contentsOf: "\\u{\(hex(scalar.value))}".utf8)
            default: line.append(contentsOf: String(scalar).utf8)
            }
        }
        line.append(UInt8(ascii: "\n"))
        return line
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return digits.count < 2 ? "0" + digits : digits
    }

    public func error(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.error, message(), file: file, line: line) }
    public func warning(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.warning, message(), file: file, line: line) }
    public func notice(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.notice, message(), file: file, line: line) }
    public func info(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.info, message(), file: file, line: line) }
    public func debug(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.debug, message(), file: file, line: line) }
}

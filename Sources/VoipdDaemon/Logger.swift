import Glibc

/// Syslog priorities: each line on stderr starts with `<N>` so that journald keeps the level.
public enum LogLevel: Int, Codable, Sendable, Comparable, CaseIterable {
    case error = 3, warning = 4, notice = 5, info = 6, debug = 7

    public init?(name: String) {
        switch name.lowercased() {
        case "error", "err": self = .error
        case "warning", "warn": self = .warning
        case "notice": self = .notice
        case "info": self = .info
        case "debug": self = .debug
        default: return nil
        }
    }

    public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

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
        for summary in summaries { write("<\(LogLevel.notice.rawValue)>" + summary) }
        if admitted { write("<\(priority.rawValue)>" + message()) }
    }

    private func write(_ text: String) {
        var line = text
        line.append("\n")
        // One write(2) per line: lines from several processes sharing stderr never interleave.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    public func error(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.error, message(), file: file, line: line) }
    public func warning(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.warning, message(), file: file, line: line) }
    public func notice(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.notice, message(), file: file, line: line) }
    public func info(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.info, message(), file: file, line: line) }
    public func debug(_ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) { log(.debug, message(), file: file, line: line) }
}

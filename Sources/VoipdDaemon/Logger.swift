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

/// One line per event on stderr, with a syslog priority prefix.
public struct Logger: Sendable {
    public var level: LogLevel

    public init(level: LogLevel) { self.level = level }

    public func log(_ priority: LogLevel, _ message: @autoclosure () -> String) {
        guard priority <= level else { return }
        var line = "<\(priority.rawValue)>" + message()
        line.append("\n")
        // One write(2) per line: lines from several processes sharing stderr never interleave.
        var bytes = Array(line.utf8)
        _ = bytes.withUnsafeMutableBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }

    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func notice(_ message: @autoclosure () -> String) { log(.notice, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
}

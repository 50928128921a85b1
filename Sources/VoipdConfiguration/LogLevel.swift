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

    // Inlinable: the daemon compares levels on every log call, from another module.
    @inlinable public static func < (a: LogLevel, b: LogLevel) -> Bool { a.rawValue < b.rawValue }
}

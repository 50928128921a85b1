import Glibc

/// The few printf formats the tables use (`%d`, `%02d`, `%.1f`), by the C library's
/// `vsnprintf`: voipctl links `FoundationEssentials`, which has no `String(format:)`.
func formatted(_ format: String, _ arguments: CVarArg...) -> String {
    withVaList(arguments) { list in
        // Numbers only: never near the buffer's size.
        var buffer = [CChar](repeating: 0, count: 128)
        let count = vsnprintf(&buffer, buffer.count, format, list)
        guard count >= 0 else { return "" }
        return String(decoding: buffer.prefix(min(Int(count), buffer.count - 1)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension String {
    /// The text followed by spaces up to `width` characters (as long as it is when longer).
    func padded(to width: Int) -> String {
        self + String(repeating: " ", count: Swift.max(0, width - count))
    }
}

/// A wall-clock time in the local time zone, `yyyy-MM-dd HH:mm:ss.SSS` (milliseconds cut,
/// not rounded), by the C library's `localtime_r` and `strftime`.
func localTimestamp(_ seconds: Double) -> String {
    let whole = seconds.rounded(.down)
    var time = time_t(whole)
    var parts = tm()
    guard localtime_r(&time, &parts) != nil else { return "\(seconds)" }
    var buffer = [CChar](repeating: 0, count: 64)
    let length = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
    let milliseconds = min(999, Int((seconds - whole) * 1000))
    return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) + formatted(".%03d", milliseconds)
}

extension [String] {
    /// The strings with `separator` between them, as `joined(separator:)` makes them, by a
    /// loop: the standard library's `joined` is not specialised for the caller, and its first
    /// call asks the runtime for an associated type of `[String]`, a look-up among every
    /// protocol conformance in the program (5 % of a `voipctl status`).
    func separated(by separator: String) -> String {
        var text = ""
        for index in indices {
            if index > startIndex { text += separator }
            text += self[index]
        }
        return text
    }
}

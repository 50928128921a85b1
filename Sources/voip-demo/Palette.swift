import Glibc

/// Colours (SGR sequences) for the demo's report: on only when standard output is a
/// terminal, `NO_COLOR` is unset or empty (no-color.org), and `TERM` is not `dumb`.
struct Palette {
    let enabled: Bool

    static func forStandardOutput() -> Palette {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        let noColor = variable("NO_COLOR").map { !$0.isEmpty } ?? false
        return Palette(enabled: isatty(STDOUT_FILENO) == 1 && !noColor && variable("TERM") != "dumb")
    }

    func bold(_ text: String) -> String { paint("1", text) }
    func dim(_ text: String) -> String { paint("2", text) }
    func red(_ text: String) -> String { paint("31", text) }
    func green(_ text: String) -> String { paint("32", text) }
    func yellow(_ text: String) -> String { paint("33", text) }
    func blue(_ text: String) -> String { paint("34", text) }
    func magenta(_ text: String) -> String { paint("35", text) }
    func cyan(_ text: String) -> String { paint("36", text) }

    private func paint(_ code: String, _ text: String) -> String {
        enabled && !text.isEmpty ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}

/// The help texts, made from ``VerbTable``.
enum Usage {
    static var general: String {
        let column = VerbTable.verbs.map(\.shortSynopsis.count).max()! + 2
        var text = """
        usage: voipctl [--socket PATH] [--json] VERB [ARGS...]
               voipctl --version

        Talks to voipd over its control socket (--socket, else $VOIPD_SOCKET, else
        $XDG_RUNTIME_DIR/voipd.sock, or /run/voipd/voipd.sock as root).

        """
        text += "\n"
        for section in VerbTable.Section.allCases {
            text += "\(section.rawValue):\n"
            for verb in VerbTable.verbs where verb.section == section {
                text += "  " + verb.shortSynopsis.padded(to: column) + verb.summary + "\n"
            }
        }
        text += """

        Every verb takes --help. Exit status: 0 ok, 1 failure, 2 usage, 3 no such app or
        voipd not running.
        """
        return text
    }

    /// `voipctl VERB --help`.
    static func verb(_ verb: VerbSpec) -> String {
        var lines = verb.synopses.enumerated().flatMap { wrap(($0.offset == 0 ? "usage: voipctl " : "       voipctl ") + $0.element) }
        lines.append("")
        lines.append(contentsOf: (verb.details ?? verb.summary.prefix(1).uppercased() + verb.summary.dropFirst() + ".")
            .split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 })
        if !verb.options.isEmpty {
            lines.append("")
            func names(_ option: OptionSpec) -> String { (option.alias.map { "\($0), " } ?? "") + option.synopsis }
            let column = verb.options.map { names($0).count }.max()! + 2
            for option in verb.options {
                lines.append("  " + names(option).padded(to: column) + option.help)
            }
        }
        return lines.joined(separator: "\n")
    }

    /// A synopsis broken before an option so that no line is wider than 80 columns; the
    /// lines after the first are indented under the verb.
    static func wrap(_ line: String, width: Int = 80) -> [String] {
        guard line.count > width, let verbEnd = line.dropFirst(15).firstIndex(of: " ") else { return [line] }
        let indent = String(repeating: " ", count: line.distance(from: line.startIndex, to: verbEnd) + 1)
        var lines: [String] = []
        var current = String(line[..<verbEnd])
        // Words: "[--env KEY=VALUE]..." stays whole; so do "-- CMD [ARGS...]" and "NAME".
        var words: [String] = []
        for word in line[verbEnd...].split(separator: " ") {
            if let last = words.last, last.hasPrefix("[") && !last.hasSuffix("]") && !last.hasSuffix("]...") || last == "--" || last.hasSuffix(" CMD") {
                words[words.count - 1] += " " + word
            } else {
                words.append(String(word))
            }
        }
        for word in words {
            if current.count + 1 + word.count > width {
                lines.append(current)
                current = indent + word
            } else {
                current += " " + word
            }
        }
        lines.append(current)
        return lines
    }
}

import Glibc

/// Where the demo writes: no line wider than ``width`` columns (a longer one is broken at
/// spaces and continued under its own indentation), and on a terminal, while the steps run
/// and nothing else is printed, one line saying what is happening, rewritten in place.
final class Console {
    static let width = 100

    let palette: Palette
    private let showsProgress: Bool
    private var progressShown = false

    init(palette: Palette, showsProgress: Bool) {
        self.palette = palette
        self.showsProgress = showsProgress && isatty(STDOUT_FILENO) == 1
    }

    /// Prints a line (its SGR sequences take no room).
    func line(_ text: String = "") {
        clearProgress()
        if Self.visibleWidth(text) <= Self.width {
            print(text)
        } else {
            // Colour is lost on a line that has to be broken: only text from elsewhere (a log
            // line, an error) is ever that long.
            for part in Self.wrap(Self.plain(text), width: Self.width) { print(part) }
        }
    }

    /// Says what the demo is doing now, in place of what it said before (a terminal only).
    func progress(_ text: String) {
        guard showsProgress else { return }
        let cut = text.count > Self.width - 2 ? String(text.prefix(Self.width - 3)) + "…" : text
        print("\r\u{1B}[K" + palette.dim(cut), terminator: "")
        fflush(nil)
        progressShown = true
    }

    func clearProgress() {
        guard progressShown else { return }
        print("\r\u{1B}[K", terminator: "")
        progressShown = false
    }

    /// The text without its SGR sequences.
    static func plain(_ text: String) -> String {
        var result = ""
        var inEscape = false
        for character in text {
            if inEscape {
                if character.isLetter { inEscape = false }
            } else if character == "\u{1B}" {
                inEscape = true
            } else {
                result.append(character)
            }
        }
        return result
    }

    static func visibleWidth(_ text: String) -> Int { plain(text).count }

    /// `text` in lines of at most `width` columns, broken at spaces; the lines after the
    /// first are indented as the first is, plus two. A word longer than a line is cut.
    static func wrap(_ text: String, width: Int) -> [String] {
        let leading = text.prefix { $0 == " " }
        let indent = String(repeating: " ", count: min(leading.count + 2, width / 2))
        var lines: [String] = []
        var current = String(leading)
        var hasWord = false
        for piece in text.dropFirst(leading.count).split(separator: " ") {
            var word = piece
            if hasWord && current.count + 1 + word.count <= width {
                current += " " + word
                continue
            }
            if hasWord {
                lines.append(current)
                current = indent
            }
            while current.count + word.count > width {
                let room = width - current.count
                lines.append(current + word.prefix(room))
                word = word.dropFirst(room)
                current = indent
            }
            current += word
            hasWord = true
        }
        lines.append(current)
        return lines
    }
}

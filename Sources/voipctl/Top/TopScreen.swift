/// The live view laid out on a screen of a given size: a list of lines, each exactly as
/// wide as the screen, with their SGR attributes.
enum TopScreen {
    static let keys = "↑↓ select  </> sort  r reverse  b background  f foreground  t terminate  q quit"

    private static let bold = "\u{1B}[1m", inverse = "\u{1B}[7m", dim = "\u{1B}[2m", plain = "\u{1B}[0m"

    /// Rows the list has on a screen `height` lines high (header, column titles, message and
    /// keys take the rest).
    static func listHeight(_ height: Int) -> Int { max(height - 6, 0) }

    static func lines(_ view: inout TopView, width: Int, height: Int) -> [String] {
        guard width > 0, height > 0 else { return [] }
        func fit(_ text: String) -> String {
            let cut = TopLayout.cut(text, to: width)
            return cut + String(repeating: " ", count: width - cut.count)
        }
        var lines: [String] = []
        if let unreachable = view.unreachable {
            lines.append(bold + fit("voipd: \(unreachable)") + plain)
            lines.append(fit("trying again at each refresh"))
        } else {
            let header = view.voipd.header
            lines.append(bold + fit(header[0]) + plain)
            lines.append(fit(header[1]))
        }
        lines.append(fit(""))
        let cells = view.rows.map { row in row.values(view.columns).map(\.display) }
        let layout = TopLayout(columns: view.columns, rows: cells, total: width)
        lines.append(inverse + fit(layout.line(view.columns.indices.map(view.title(of:)), view.columns)) + plain)

        // The list, scrolled so that the selected row is in sight.
        let shown = listHeight(height)
        if let selected = view.selectedIndex {
            if selected < view.firstShown { view.firstShown = selected }
            if selected >= view.firstShown + shown { view.firstShown = selected - shown + 1 }
        }
        view.firstShown = max(0, min(view.firstShown, max(view.rows.count - shown, 0)))
        for index in view.firstShown..<min(view.firstShown + shown, cells.count) {
            let line = fit(layout.line(cells[index], view.columns))
            lines.append(index == view.selectedIndex ? inverse + line + plain : line)
        }
        if view.rows.isEmpty && shown > 0 { lines.append(fit("  (no apps)")) }
        while lines.count < height - 2 { lines.append(fit("")) }
        lines.append(fit(view.message ?? ""))
        lines.append(dim + fit(keys) + plain)
        return Array(lines.prefix(height))
    }

    /// The table without a terminal: the header, then every row, as wide as it needs.
    static func table(_ view: TopView) -> String {
        let cells = view.rows.map { row in row.values(view.columns).map(\.display) }
        let layout = TopLayout(columns: view.columns, rows: cells, total: nil)
        var lines = view.voipd.header + [""]
        lines.append(layout.line(view.columns.map(\.title), view.columns))
        lines += cells.map { layout.line($0, view.columns) }
        return lines.map { String($0.reversed().drop { $0 == " " }.reversed()) }.joined(separator: "\n")
    }
}

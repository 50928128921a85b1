import FoundationEssentials

/// One cell of `voipctl top`: compared for sorting, printed for people, encoded for --json.
enum TopValue: Encodable {
    case text(String)
    case count(Int)
    /// A span of time in seconds: `42s`, `3m04s`, `2h05m`, `3d04h`.
    case elapsed(Double)
    /// CPU time in seconds, as top's TIME+: `1:02.35` (minutes, seconds, hundredths).
    case cpuTime(Double)
    case percent(Double)
    case bytes(UInt64)
    /// Not known (no process, not measured yet): `-`, sorted last, null in JSON.
    case missing

    /// What the cell shows. Text from elsewhere (app names, reasons) has its control
    /// characters replaced: a name must not be able to move the cursor or clear the screen.
    var display: String {
        switch self {
        case .text(let text): return Self.printable(text)
        case .count(let count): return "\(count)"
        case .elapsed(let seconds): return Self.elapsed(seconds)
        case .cpuTime(let seconds):
            let hundredths = Int((seconds * 100).rounded(.down))
            return formatted("%d:%02d.%02d", hundredths / 6000, hundredths / 100 % 60, hundredths % 100)
        case .percent(let percent): return formatted("%.1f", percent)
        case .bytes(let bytes): return Self.bytes(bytes)
        case .missing: return "-"
        }
    }

    /// Numbers first from the largest, text from A; missing values last either way.
    static func precedes(_ a: TopValue, _ b: TopValue, reversed: Bool) -> Bool? {
        switch (a.sortKey, b.sortKey) {
        case (nil, nil): return nil
        case (nil, _): return false
        case (_, nil): return true
        case (.number(let x)?, .number(let y)?): return x == y ? nil : (x > y) != reversed
        case (.text(let x)?, .text(let y)?):
            let order = Self.naturalOrder(x, y)
            return order == .orderedSame ? nil : (order == .orderedAscending) != reversed
        case (.number?, .text?): return !reversed
        case (.text?, .number?): return reversed
        }
    }

    private enum SortKey {
        case number(Double)
        case text(String)
    }

    private var sortKey: SortKey? {
        switch self {
        case .text(let text): return .text(text)
        case .count(let count): return .number(Double(count))
        case .elapsed(let seconds), .cpuTime(let seconds), .percent(let seconds): return .number(seconds)
        case .bytes(let bytes): return .number(Double(bytes))
        case .missing: return nil
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .text(let text): try container.encode(text)
        case .count(let count): try container.encode(count)
        case .elapsed(let value), .cpuTime(let value), .percent(let value): try container.encode(value)
        case .bytes(let bytes): try container.encode(bytes)
        case .missing: try container.encodeNil()
        }
    }

    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format ? "?" : scalar
        }))
    }

    static func elapsed(_ seconds: Double) -> String {
        let whole = max(0, Int(seconds.rounded(.down)))
        switch whole {
        case ..<60: return "\(whole)s"
        case ..<3600: return formatted("%dm%02ds", whole / 60, whole % 60)
        case ..<86_400: return formatted("%dh%02dm", whole / 3600, whole / 60 % 60)
        default: return formatted("%dd%02dh", whole / 86_400, whole / 3600 % 24)
        }
    }

    static func bytes(_ bytes: UInt64) -> String {
        let units = ["B", "K", "M", "G", "T"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes)B" : formatted(value < 10 ? "%.1f" : "%.0f", value) + units[unit]
    }
}

/// One column of `voipctl top` (the list is ``all``, in TopColumns.swift).
struct TopColumn: Sendable {
    enum Alignment: Sendable {
        case left, right
    }

    let title: String
    /// Its key in `voipctl top --json`.
    let key: String
    /// The narrowest it is drawn (wider if a title or a value needs it and there is room).
    let width: Int
    let alignment: Alignment
    let value: @Sendable (TopRow) -> TopValue

    init(_ title: String, _ key: String, width: Int, _ alignment: Alignment = .right, _ value: @escaping @Sendable (TopRow) -> TopValue) {
        self.title = title
        self.key = key
        self.width = width
        self.alignment = alignment
        self.value = value
    }

    /// A column by its title or key, as typed (any case).
    static func named(_ name: String) -> Int? {
        all.firstIndex { $0.key.lowercased() == name.lowercased() || $0.title.lowercased() == name.lowercased() }
    }
}

/// Rows laid out in columns: each at least as wide as its column says, as wide as its
/// title and cells need if there is room, the last taking the rest; a cell too wide is cut
/// with `…`. Two spaces between columns.
struct TopLayout {
    let widths: [Int]

    /// Widths for `rows` of cells within `total` columns (nil: as wide as they need).
    init(columns: [TopColumn], rows: [[String]], total: Int?) {
        var widths = columns.map { max($0.width, $0.title.count + 1) }
        for row in rows { for (i, cell) in row.enumerated() where i < widths.count - 1 { widths[i] = max(widths[i], cell.count) } }
        guard let total else {
            widths[widths.count - 1] = rows.map { $0.last?.count ?? 0 }.max().map { max($0, widths[widths.count - 1]) } ?? widths[widths.count - 1]
            self.widths = widths
            return
        }
        // The first columns take what they need; whatever is over goes to the last one.
        let fixed = widths.dropLast().reduce(0, +) + 2 * (widths.count - 1)
        widths[widths.count - 1] = max(total - fixed, 0)
        self.widths = widths
    }

    func line(_ cells: [String], _ columns: [TopColumn]) -> String {
        var parts: [String] = []
        for (i, cell) in cells.enumerated() {
            let width = widths[i]
            let text = TopLayout.cut(cell, to: width)
            let pad = String(repeating: " ", count: max(0, width - text.count))
            parts.append(columns[i].alignment == .left ? text + pad : pad + text)
        }
        return parts.joined(separator: "  ")
    }

    static func cut(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        guard width > 0 else { return "" }
        return String(text.prefix(width - 1)) + "…"
    }
}

extension TopValue {
    /// Finder's order, which `localizedStandardCompare` gave (it is not in
    /// FoundationEssentials): letters without regard to case, runs of digits by their value
    /// ("app9" before "App10").
    static func naturalOrder(_ x: String, _ y: String) -> ComparisonResult {
        var a = Array(x.lowercased().unicodeScalars)[...], b = Array(y.lowercased().unicodeScalars)[...]
        func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar >= "0" && scalar <= "9" }
        while let first = a.first, let second = b.first {
            if isDigit(first) && isDigit(second) {
                let left = a.prefix(while: isDigit), right = b.prefix(while: isDigit)
                a = a.dropFirst(left.count)
                b = b.dropFirst(right.count)
                let l = left.drop { $0 == "0" }, r = right.drop { $0 == "0" }
                if l.count != r.count { return l.count < r.count ? .orderedAscending : .orderedDescending }
                if let (p, q) = zip(l, r).first(where: { $0 != $1 }) { return p < q ? .orderedAscending : .orderedDescending }
                continue
            }
            if first != second { return first < second ? .orderedAscending : .orderedDescending }
            a = a.dropFirst()
            b = b.dropFirst()
        }
        return a.isEmpty && b.isEmpty ? .orderedSame : (a.isEmpty ? .orderedAscending : .orderedDescending)
    }
}

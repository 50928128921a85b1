import VoipdProtocol

/// What the live view shows and what the user chose (sort, selection, a pending question):
/// the state of `voipctl top` apart from any input or output, changed by refreshes and keys.
struct TopView {
    /// What a key asks for.
    enum Action: Equatable {
        case none
        case quit
        /// Draw everything again, not just what changed.
        case redrawAll
        case command(AppVerb, app: String)
    }

    let columns: [TopColumn]
    private(set) var rows: [TopRow] = []
    var voipd = VoipdFigures()
    private(set) var sortColumn: Int
    private(set) var reversed = false
    /// The selected app, by name, so that it stays selected as the rows move.
    private(set) var selected: String?
    /// The first row shown (the list scrolls to keep the selection in sight).
    var firstShown = 0
    /// The outcome of the last command, or the question being asked.
    var message: String?
    /// Set while voipd cannot be reached: why.
    var unreachable: String?
    private var confirming: (verb: AppVerb, app: String)?

    init(columns: [TopColumn] = TopColumn.all, sortColumn: Int = 0) {
        self.columns = columns
        self.sortColumn = sortColumn
    }

    var selectedIndex: Int? { selected.flatMap { name in rows.firstIndex { $0.status.name == name } } }

    /// Takes new rows, sorted; the selection stays on its app, or the first row if it went.
    mutating func update(_ newRows: [TopRow]) {
        rows = newRows
        sort()
        if selectedIndex == nil { selected = rows.first?.status.name }
    }

    private mutating func sort() {
        let column = columns[sortColumn]
        let reversed = reversed
        let keyed = rows.map { (row: $0, key: column.value($0)) }
        rows = keyed.sorted { a, b in
            TopValue.precedes(a.key, b.key, reversed: reversed) ?? (a.row.status.name < b.row.status.name)
        }.map(\.row)
    }

    /// The key's effect. `page` is how many rows the screen shows.
    mutating func press(_ key: TopKey, page: Int) -> Action {
        if let question = confirming {
            confirming = nil
            if key == .character("y") || key == .character("Y") {
                message = "\(question.verb.rawValue) \(question.app)…"
                return .command(question.verb, app: question.app)
            }
            message = "\(question.verb.rawValue) \(question.app): not done"
            return .none
        }
        switch key {
        case .up: move(by: -1)
        case .down: move(by: 1)
        case .pageUp: move(by: -max(page, 1))
        case .pageDown: move(by: max(page, 1))
        case .home: move(by: -rows.count)
        case .end: move(by: rows.count)
        case .redraw: return .redrawAll
        case .character(let character):
            switch character {
            case "q", "Q": return .quit
            case "k": move(by: -1)
            case "j": move(by: 1)
            case ">", "s": resort(column: (sortColumn + 1) % columns.count, reversed: false)
            case "<": resort(column: (sortColumn + columns.count - 1) % columns.count, reversed: false)
            case "r": resort(column: sortColumn, reversed: !reversed)
            case "b", "f":
                guard let app = selected else { return .none }
                let verb: AppVerb = character == "b" ? .background : .foreground
                message = "\(verb.rawValue) \(app)…"
                return .command(verb, app: app)
            case "t":
                guard let app = selected else { return .none }
                confirming = (.terminate, app)
                message = "terminate \(app)? (y/n)"
            default: return .none
            }
        }
        return .none
    }

    private mutating func move(by offset: Int) {
        guard !rows.isEmpty else { return }
        let index = min(max((selectedIndex ?? 0) + offset, 0), rows.count - 1)
        selected = rows[index].status.name
    }

    private mutating func resort(column: Int, reversed: Bool) {
        sortColumn = column
        self.reversed = reversed
        sort()
    }

    /// The sorted column's title, marked with the order: ▼ largest or Z first, ▲ smallest or A first.
    func title(of index: Int) -> String {
        guard index == sortColumn else { return columns[index].title }
        let textFirst = columns[index].alignment == .left
        return columns[index].title + ((textFirst != reversed) ? "▲" : "▼")
    }
}

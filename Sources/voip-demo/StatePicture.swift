/// What an app was doing, as the picture of its states draws it. When several states come
/// within one character's time, the character shows the one with the highest raw value: a
/// wake of a few milliseconds still shows.
enum PictureState: Int, CaseIterable {
    case notRunning, suspended, background, active, woken

    var symbol: Character {
        switch self {
        case .notRunning: return " "
        case .suspended: return "░"
        case .background: return "▓"
        case .active: return "█"
        case .woken: return "▲"
        }
    }

    var name: String {
        switch self {
        case .notRunning: return "not running"
        case .suspended: return "suspended"
        case .background: return "background"
        case .active: return "active"
        case .woken: return "woken by a call"
        }
    }

    func paint(_ text: String, _ palette: Palette) -> String {
        switch self {
        case .notRunning: return text
        case .suspended: return palette.blue(text)
        case .background: return palette.yellow(text)
        case .active: return palette.green(text)
        case .woken: return palette.magenta(text)
        }
    }
}

/// A one-line picture of an app's states over time, one character for each equal slice of
/// it, and a line of marks under it (a call, the screen lock) where they happened.
struct StatePicture {
    let cells: [PictureState]
    let marks: String
    /// The time one character stands for, in seconds.
    let slice: Double

    /// From the app's transitions (in order) between `start` and `end`, `width` characters wide.
    init(transitions: [Transition], from start: Double, to end: Double, width: Int, marks: [(time: Double, label: Character)]) {
        // The state from each transition on: background after suspended is a wake, and stays
        // one until the app is suspended again.
        var changes: [(time: Double, state: PictureState)] = []
        var current = PictureState.notRunning
        for transition in transitions {
            switch transition.to {
            case "active", "inactive": current = .active
            case "background": current = transition.from == "suspended" || current == .woken ? .woken : .background
            case "suspended": current = .suspended
            default: current = .notRunning
            }
            changes.append((transition.time, current))
        }
        slice = max(end - start, 0.001) / Double(width)
        var cells: [PictureState] = []
        for index in 0..<width {
            let from = start + Double(index) * slice, to = from + slice
            var shown = changes.last { $0.time <= from }?.state ?? .notRunning
            for change in changes where change.time > from && change.time < to && change.state.rawValue > shown.rawValue {
                shown = change.state
            }
            cells.append(shown)
        }
        self.cells = cells
        var line = [Character](repeating: " ", count: width)
        for mark in marks.sorted(by: { $0.time < $1.time }) {
            var index = min(max(Int((mark.time - start) / slice), 0), width - 1)
            while index < width - 1 && line[index] != " " { index += 1 }
            line[index] = mark.label
        }
        while line.last == " " { line.removeLast() }
        self.marks = String(line)
    }

    /// The picture, each run of one state in its colour.
    func drawn(_ palette: Palette) -> String {
        var text = ""
        var index = 0
        while index < cells.count {
            let state = cells[index]
            var end = index
            while end < cells.count && cells[end] == state { end += 1 }
            text += state.paint(String(repeating: state.symbol, count: end - index), palette)
            index = end
        }
        return text
    }

    /// What each character means, in the same colours.
    static func legend(_ palette: Palette) -> String {
        [PictureState.active, .background, .suspended, .woken].map { state in
            state.paint(String(state.symbol), palette) + " " + state.name
        }.joined(separator: "  ")
    }
}

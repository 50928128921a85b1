/// One run's figures of a `voipd-bench sip` measurement, in microseconds: what suspension
/// adds to the callee's INVITE → 180, beside the wake floor measured in the same run.
protocol SIPRunFigures {
    /// What suspension adds to the p50.
    var cost: Double { get }
    var floorP50: Double { get }
    var floorP99: Double { get }
    /// voipd's count of the callee's wakes over the run (one per suspended call).
    var wakes: Int { get }
    /// The run in one line, for progress.
    var line: String { get }
    /// The callee as the figures name it; nil for the softphone, the first callee.
    static var callee: String? { get }
}

/// The figures of one callee, registrar and CPU placement over every run: the medians of
/// the runs' figures, each cost the median of the runs' own differences.
struct SIPResults<Run: SIPRunFigures> {
    var registrar: SIPOptions.Registrar
    var placement: CPUPlacement
    var calls: Int
    var warmUp: Int
    var floorWakes: Int
    var runs: [Run] = []

    func medianOf(_ figure: (Run) -> Double) -> Double { median(runs.map(figure)) }

    var cost: Double { medianOf(\.cost) }
    var floorP50: Double { medianOf(\.floorP50) }
    /// The target: suspension adds no more than twice the wake floor's p50.
    var target: Double { 2 * floorP50 }
    var targetMet: Bool { cost <= target }

    var label: String { (Run.callee.map { "callee=\($0) " } ?? "") + "registrar=\(registrar.rawValue) cpu=\(placement.rawValue)" }

    /// `sip LABEL calls=N: ` the callee's `figures` | the floor and the verdict, each field
    /// apart with `|`.
    func line(figures: [String]) -> String {
        let verdict = targetMet ? "met" : "missed by \(fixed(cost - target, 1)) us (cost \(fixed(cost / floorP50, 2))x the floor)"
        var fields = figures
        fields[0] = "sip \(label) calls=\(calls): " + fields[0]
        fields.append("floor p50 \(fixed(floorP50, 1)) us, target 2x = \(fixed(target, 1)) us: \(verdict)")
        return fields.joined(separator: " | ") + (runs.count > 1 ? " (medians of \(runs.count) runs)" : "")
    }

    /// `NAME p50 X us p99 Y us`: the medians of one mode's percentiles.
    func modeLine(_ name: String, _ mode: KeyPath<Run, Percentiles>) -> String {
        "\(name) p50 \(fixed(medianOf { $0[keyPath: mode].p50 }, 1)) us p99 \(fixed(medianOf { $0[keyPath: mode].p99 }, 1)) us"
    }

    /// `KEY_p50_us`, `KEY_p99_us`: the medians of one mode's percentiles, as JSON fields.
    func modeJSON(_ key: String, _ mode: KeyPath<Run, Percentiles>) -> [(String, String)] {
        [("\(key)_p50_us", fixed(medianOf { $0[keyPath: mode].p50 })), ("\(key)_p99_us", fixed(medianOf { $0[keyPath: mode].p99 }))]
    }

    /// `KEY_p50_us_runs`, `KEY_p99_us_runs`: one mode's percentiles in every run, as JSON fields.
    func modeRunsJSON(_ key: String, _ mode: KeyPath<Run, Percentiles>) -> [(String, String)] {
        [("\(key)_p50_us_runs", numbers { $0[keyPath: mode].p50 }), ("\(key)_p99_us_runs", numbers { $0[keyPath: mode].p99 })]
    }

    /// The fields every JSON line starts with: the test, the callee if named, the
    /// registrar, the placement and the counts.
    var jsonHead: [(String, String)] {
        [("test", "\"sip\"")] + (Run.callee.map { [("callee", "\"\($0)\"")] } ?? [])
            + [("registrar", "\"\(registrar.rawValue)\""), ("cpu_mode", "\(placement.rawValue)"),
               ("calls", "\(calls)"), ("warm_up_calls", "\(warmUp)"), ("runs", "\(runs.count)")]
    }

    /// The cost, the floor and the verdict as JSON fields.
    var jsonVerdict: [(String, String)] {
        [("cost_p50_us", fixed(cost)), ("floor_p50_us", fixed(floorP50)), ("floor_wakes", "\(floorWakes)"),
         ("target_us", fixed(target)), ("target_met", "\(targetMet)")]
    }

    /// One figure of every run, as a JSON array.
    func numbers(_ figure: (Run) -> Double) -> String {
        "[" + runs.map { fixed(figure($0), 1) }.joined(separator: ",") + "]"
    }
}

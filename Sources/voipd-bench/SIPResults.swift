/// One run's figures of a `voipd-bench sip` measurement, in microseconds: what suspension
/// adds to the callee's INVITE → 180, beside the wake floor measured in the same run.
protocol SIPRunFigures {
    /// What suspension adds to the p50.
    var cost: Double { get }
    var baseline: SIPRunBaseline { get }
    /// The run in one line, for progress.
    var line: String { get }
    /// The callee as the figures name it; nil for the softphone, the first callee.
    static var callee: String? { get }
}

extension SIPRunFigures {
    var floorP50: Double { baseline.floorP50 }
    var floorP99: Double { baseline.floorP99 }
    var wakes: Int { baseline.wakes }
}

/// What every run measures beside its callee's modes: the wake floor of the same run (µs),
/// and voipd's count of the callee's wakes over the run (one per call to it while suspended).
struct SIPRunBaseline {
    var floorP50: Double
    var floorP99: Double
    var wakes: Int
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

    /// The medians of one mode's p50 and p99 in the JSON lines.
    func medians(_ mode: KeyPath<Run, Percentiles>) -> (p50: Rounded, p99: Rounded) {
        (Rounded(medianOf { $0[keyPath: mode].p50 }), Rounded(medianOf { $0[keyPath: mode].p99 }))
    }

    /// One JSON object: the test, the callee if named, the registrar, the placement and the
    /// counts; `callee`'s own figures; then the cost, the floor and the verdict.
    func figuresJSON(_ callee: some Encodable) -> String {
        let head = SIPHeadFigures(callee: Run.callee, registrar: registrar.rawValue, cpuMode: placement.rawValue, calls: calls,
                                  warmUpCalls: warmUp, runs: runs.count)
        let verdict = SIPVerdictFigures(costP50: Rounded(cost), floorP50: Rounded(floorP50), floorWakes: floorWakes, target: Rounded(target),
                                        targetMet: targetMet, costP50Runs: numbers(\.cost), floorP50Runs: numbers(\.floorP50))
        return jsonLine(FlatFigures([head, callee, verdict]))
    }

    /// One figure of every run, for a JSON array.
    func numbers(_ figure: (Run) -> Double) -> [Rounded] {
        runs.map { Rounded(figure($0), 1) }
    }
}

/// The fields every `sip` JSON line starts with.
private struct SIPHeadFigures: Encodable {
    let test = "sip"
    var callee: String?
    var registrar: String
    var cpuMode, calls, warmUpCalls, runs: Int

    enum CodingKeys: String, CodingKey {
        case test, callee, registrar, calls, runs
        case cpuMode = "cpu_mode", warmUpCalls = "warm_up_calls"
    }
}

/// The cost, the floor and the verdict of a `sip` JSON line.
private struct SIPVerdictFigures: Encodable {
    var costP50, floorP50: Rounded
    var floorWakes: Int
    var target: Rounded
    var targetMet: Bool
    var costP50Runs, floorP50Runs: [Rounded]

    enum CodingKeys: String, CodingKey {
        case costP50 = "cost_p50_us", floorP50 = "floor_p50_us", floorWakes = "floor_wakes", target = "target_us"
        case targetMet = "target_met", costP50Runs = "cost_p50_us_runs", floorP50Runs = "floor_p50_us_runs"
    }
}

/// One run's figures with baresip as the callee, in microseconds: INVITE → 180 at the
/// caller to the unsupervised baresip, to the adopted one running and to it suspended, and
/// the wake floor of the same run.
struct BaresipRun {
    var unsupervised: Percentiles
    var running: Percentiles
    var suspended: Percentiles
    var floorP50: Double
    var floorP99: Double
    /// voipd's count of the adopted baresip's wakes over the run (one per suspended call).
    var wakes: Int

    /// What adoption adds while the program runs, and what suspension adds, to the p50
    /// of the unsupervised program.
    var adoptionCost: Double { running.p50 - unsupervised.p50 }
    var cost: Double { suspended.p50 - unsupervised.p50 }

    var line: String {
        "unsupervised p50 \(fixed(unsupervised.p50, 1)) us | adopted, running p50 \(fixed(running.p50, 1)) us"
            + " | adopted, suspended p50 \(fixed(suspended.p50, 1)) us | cost p50 \(fixed(cost, 1)) us | floor p50 \(fixed(floorP50, 1)) us"
    }
}

/// baresip's figures for one registrar and CPU placement over every run: the medians of
/// the runs' figures, each cost the median of the runs' own differences.
struct BaresipResult {
    var registrar: SIPOptions.Registrar
    var placement: CPUPlacement
    var calls: Int
    var warmUp: Int
    var floorWakes: Int
    var runs: [BaresipRun] = []

    private func medianOf(_ figure: (BaresipRun) -> Double) -> Double { median(runs.map(figure)) }

    var cost: Double { medianOf(\.cost) }
    var floorP50: Double { medianOf(\.floorP50) }
    /// The softphone's target: suspension adds no more than twice the wake floor's p50.
    var target: Double { 2 * floorP50 }
    var targetMet: Bool { cost <= target }

    var label: String { "callee=baresip registrar=\(registrar.rawValue) cpu=\(placement.rawValue)" }

    var line: String {
        let verdict = targetMet ? "met" : "missed by \(fixed(cost - target, 1)) us (cost \(fixed(cost / floorP50, 2))x the floor)"
        let fields = [
            "sip \(label) calls=\(calls): unsupervised p50 \(fixed(medianOf(\.unsupervised.p50), 1)) us p99 \(fixed(medianOf(\.unsupervised.p99), 1)) us",
            "adopted, running p50 \(fixed(medianOf(\.running.p50), 1)) us p99 \(fixed(medianOf(\.running.p99), 1)) us",
            "adopted, suspended p50 \(fixed(medianOf(\.suspended.p50), 1)) us p99 \(fixed(medianOf(\.suspended.p99), 1)) us",
            "cost p50 \(fixed(cost, 1)) us (running: \(fixed(medianOf(\.adoptionCost), 1)) us)",
            "floor p50 \(fixed(floorP50, 1)) us, target 2x = \(fixed(target, 1)) us: \(verdict)",
        ]
        return fields.joined(separator: " | ") + (runs.count > 1 ? " (medians of \(runs.count) runs)" : "")
    }

    var json: String {
        jsonObject([
            ("test", "\"sip\""), ("callee", "\"baresip\""), ("registrar", "\"\(registrar.rawValue)\""), ("cpu_mode", "\(placement.rawValue)"),
            ("calls", "\(calls)"), ("warm_up_calls", "\(warmUp)"), ("runs", "\(runs.count)"),
            ("unsupervised_p50_us", fixed(medianOf(\.unsupervised.p50))), ("unsupervised_p99_us", fixed(medianOf(\.unsupervised.p99))),
            ("running_p50_us", fixed(medianOf(\.running.p50))), ("running_p99_us", fixed(medianOf(\.running.p99))),
            ("suspended_p50_us", fixed(medianOf(\.suspended.p50))), ("suspended_p99_us", fixed(medianOf(\.suspended.p99))),
            ("adoption_cost_p50_us", fixed(medianOf(\.adoptionCost))), ("cost_p50_us", fixed(cost)),
            ("floor_p50_us", fixed(floorP50)), ("floor_wakes", "\(floorWakes)"), ("target_us", fixed(target)), ("target_met", "\(targetMet)"),
            ("cost_p50_us_runs", numbers(\.cost)), ("floor_p50_us_runs", numbers(\.floorP50)),
            ("baresip_wakes_runs", numbers { Double($0.wakes) }),
        ])
    }

    private func numbers(_ figure: (BaresipRun) -> Double) -> String {
        "[" + runs.map { fixed(figure($0), 1) }.joined(separator: ",") + "]"
    }
}

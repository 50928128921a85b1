import Foundation

/// One run's figures for one registrar and CPU placement, in microseconds: INVITE → 180
/// with the softphone running and suspended, and the wake floor measured in the same run.
struct SIPRun {
    var running: Percentiles
    var suspended: Percentiles
    var floorP50: Double
    var floorP99: Double
    /// voipd's count of the softphone's wakes over the run (one per suspended call).
    var wakes: Int

    /// What suspension adds to the p50.
    var cost: Double { suspended.p50 - running.p50 }

    var line: String {
        "running p50 \(fixed(running.p50, 1)) us p99 \(fixed(running.p99, 1)) us"
            + " | suspended p50 \(fixed(suspended.p50, 1)) us p99 \(fixed(suspended.p99, 1)) us"
            + " | cost p50 \(fixed(cost, 1)) us | floor p50 \(fixed(floorP50, 1)) us"
    }
}

/// The figures of one registrar and CPU placement over every run: the medians of the runs'
/// figures, the cost being the median of each run's own difference of p50s.
struct SIPResult {
    var registrar: SIPOptions.Registrar
    var placement: CPUPlacement
    var calls: Int
    var warmUp: Int
    var floorWakes: Int
    var runs: [SIPRun] = []

    var runningP50: Double { median(runs.map(\.running.p50)) }
    var runningP99: Double { median(runs.map(\.running.p99)) }
    var suspendedP50: Double { median(runs.map(\.suspended.p50)) }
    var suspendedP99: Double { median(runs.map(\.suspended.p99)) }
    var cost: Double { median(runs.map(\.cost)) }
    var floorP50: Double { median(runs.map(\.floorP50)) }
    /// The target: suspension adds no more than twice the wake floor's p50.
    var target: Double { 2 * floorP50 }
    var targetMet: Bool { cost <= target }

    var label: String { "registrar=\(registrar.rawValue) cpu=\(placement.rawValue)" }

    var line: String {
        let verdict = targetMet ? "met" : "missed by \(fixed(cost - target, 1)) us (cost \(fixed(cost / floorP50, 2))x the floor)"
        let fields = [
            "sip \(label) calls=\(calls): running p50 \(fixed(runningP50, 1)) us p99 \(fixed(runningP99, 1)) us",
            "suspended p50 \(fixed(suspendedP50, 1)) us p99 \(fixed(suspendedP99, 1)) us",
            "cost p50 \(fixed(cost, 1)) us",
            "floor p50 \(fixed(floorP50, 1)) us, target 2x = \(fixed(target, 1)) us: \(verdict)",
        ]
        return fields.joined(separator: " | ") + (runs.count > 1 ? " (medians of \(runs.count) runs)" : "")
    }

    var json: String {
        jsonObject([
            ("test", "\"sip\""), ("registrar", "\"\(registrar.rawValue)\""), ("cpu_mode", "\(placement.rawValue)"),
            ("calls", "\(calls)"), ("warm_up_calls", "\(warmUp)"), ("runs", "\(runs.count)"),
            ("connection", "\"one TCP connection, reused\""), ("call_end", "\"ACK, BYE, 200 to BYE\""),
            ("running_p50_us", fixed(runningP50)), ("running_p99_us", fixed(runningP99)),
            ("suspended_p50_us", fixed(suspendedP50)), ("suspended_p99_us", fixed(suspendedP99)),
            ("cost_p50_us", fixed(cost)), ("floor_p50_us", fixed(floorP50)), ("floor_wakes", "\(floorWakes)"),
            ("target_us", fixed(target)), ("target_met", "\(targetMet)"),
            ("running_p50_us_runs", numbers(\.running.p50)), ("running_p99_us_runs", numbers(\.running.p99)),
            ("suspended_p50_us_runs", numbers(\.suspended.p50)), ("suspended_p99_us_runs", numbers(\.suspended.p99)),
            ("cost_p50_us_runs", numbers(\.cost)), ("floor_p50_us_runs", numbers(\.floorP50)),
            ("floor_p99_us_runs", numbers(\.floorP99)), ("softphone_wakes_runs", numbers { Double($0.wakes) }),
        ])
    }

    private func numbers(_ figure: (SIPRun) -> Double) -> String {
        "[" + runs.map { fixed(figure($0), 1) }.joined(separator: ",") + "]"
    }

    /// A registrar that could not be measured, and why.
    static func skipped(_ registrar: SIPOptions.Registrar, placement: CPUPlacement, reason: String, json: Bool) -> String {
        guard json else { return "sip registrar=\(registrar.rawValue) cpu=\(placement.rawValue): skipped: \(reason)" }
        let escaped = reason.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return jsonObject([("test", "\"sip\""), ("registrar", "\"\(registrar.rawValue)\""), ("cpu_mode", "\(placement.rawValue)"),
                           ("skipped", "\"\(escaped)\"")])
    }
}

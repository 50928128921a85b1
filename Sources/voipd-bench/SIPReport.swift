import Foundation

/// One run's figures for one registrar and CPU placement, in microseconds: INVITE → 180
/// with the softphone running and suspended, and the wake floor measured in the same run.
struct SIPRun: SIPRunFigures {
    var running: Percentiles
    var suspended: Percentiles
    var floorP50: Double
    var floorP99: Double
    var wakes: Int
    static let callee: String? = nil

    var cost: Double { suspended.p50 - running.p50 }

    var line: String {
        "running p50 \(fixed(running.p50, 1)) us p99 \(fixed(running.p99, 1)) us"
            + " | suspended p50 \(fixed(suspended.p50, 1)) us p99 \(fixed(suspended.p99, 1)) us"
            + " | cost p50 \(fixed(cost, 1)) us | floor p50 \(fixed(floorP50, 1)) us"
    }
}

/// The softphone's figures of one registrar and CPU placement over every run.
typealias SIPResult = SIPResults<SIPRun>

extension SIPResults where Run == SIPRun {
    var line: String {
        line(figures: [modeLine("running", \.running), modeLine("suspended", \.suspended), "cost p50 \(fixed(cost, 1)) us"])
    }

    var json: String {
        jsonObject(jsonHead + [("connection", "\"one TCP connection, reused\""), ("call_end", "\"ACK, BYE, 200 to BYE\"")]
            + modeJSON("running", \.running) + modeJSON("suspended", \.suspended) + jsonVerdict
            + modeRunsJSON("running", \.running) + modeRunsJSON("suspended", \.suspended)
            + [("cost_p50_us_runs", numbers(\.cost)), ("floor_p50_us_runs", numbers(\.floorP50)),
               ("floor_p99_us_runs", numbers(\.floorP99)), ("softphone_wakes_runs", numbers { Double($0.wakes) })])
    }

    /// A registrar that could not be measured, and why.
    static func skipped(_ registrar: SIPOptions.Registrar, placement: CPUPlacement, reason: String, json: Bool) -> String {
        guard json else { return "sip registrar=\(registrar.rawValue) cpu=\(placement.rawValue): skipped: \(reason)" }
        let escaped = reason.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return jsonObject([("test", "\"sip\""), ("registrar", "\"\(registrar.rawValue)\""), ("cpu_mode", "\(placement.rawValue)"),
                           ("skipped", "\"\(escaped)\"")])
    }
}

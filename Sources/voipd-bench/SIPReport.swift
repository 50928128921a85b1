import Foundation

/// One run's figures for one registrar and CPU placement, in microseconds: INVITE → 180
/// with the softphone running and suspended, and the wake floor measured in the same run.
struct SIPRun: SIPRunFigures {
    var running: Percentiles
    var suspended: Percentiles
    var baseline: SIPRunBaseline
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
        let running = medians(\.running), suspended = medians(\.suspended)
        return figuresJSON(FlatFigures([
            SoftphoneFigures(floorP99Runs: numbers(\.floorP99), softphoneWakesRuns: runs.map(\.wakes)),
            PercentileFigures("running", p50: running.p50, p99: running.p99, runs: (numbers(\.running.p50), numbers(\.running.p99))),
            PercentileFigures("suspended", p50: suspended.p50, p99: suspended.p99, runs: (numbers(\.suspended.p50), numbers(\.suspended.p99))),
        ]))
    }

    /// A registrar that could not be measured, and why.
    static func skipped(_ registrar: SIPOptions.Registrar, placement: CPUPlacement, reason: String, json: Bool) -> String {
        guard json else { return "sip registrar=\(registrar.rawValue) cpu=\(placement.rawValue): skipped: \(reason)" }
        return jsonLine(SkippedFigures(registrar: registrar.rawValue, cpuMode: placement.rawValue, skipped: reason))
    }
}

/// The softphone's own figures in a `sip` JSON line, beside its modes' percentiles, the head
/// and the verdict.
private struct SoftphoneFigures: Encodable {
    let connection = "one TCP connection, reused"
    let callEnd = "ACK, BYE, 200 to BYE"
    var floorP99Runs: [Rounded]
    var softphoneWakesRuns: [Int]

    enum CodingKeys: String, CodingKey {
        case connection, callEnd = "call_end", floorP99Runs = "floor_p99_us_runs", softphoneWakesRuns = "softphone_wakes_runs"
    }
}

/// The JSON line of a registrar that could not be measured.
private struct SkippedFigures: Encodable {
    let test = "sip"
    var registrar: String
    var cpuMode: Int
    var skipped: String

    enum CodingKeys: String, CodingKey {
        case test, registrar, skipped
        case cpuMode = "cpu_mode"
    }
}

/// One run's figures with baresip as the callee, in microseconds: INVITE → 180 at the
/// caller to the unsupervised baresip, to the adopted one running and to it suspended, and
/// the wake floor of the same run.
struct BaresipRun: SIPRunFigures {
    var unsupervised: Percentiles
    var running: Percentiles
    var suspended: Percentiles
    var baseline: SIPRunBaseline
    static let callee: String? = "baresip"

    /// What adoption adds while the program runs, and what suspension adds, to the p50
    /// of the unsupervised program.
    var adoptionCost: Double { running.p50 - unsupervised.p50 }
    var cost: Double { suspended.p50 - unsupervised.p50 }

    var line: String {
        "unsupervised p50 \(fixed(unsupervised.p50, 1)) us | adopted, running p50 \(fixed(running.p50, 1)) us"
            + " | adopted, suspended p50 \(fixed(suspended.p50, 1)) us | cost p50 \(fixed(cost, 1)) us | floor p50 \(fixed(floorP50, 1)) us"
    }
}

/// baresip's figures for one registrar and CPU placement over every run.
typealias BaresipResult = SIPResults<BaresipRun>

extension SIPResults where Run == BaresipRun {
    var line: String {
        line(figures: [modeLine("unsupervised", \.unsupervised), modeLine("adopted, running", \.running),
                       modeLine("adopted, suspended", \.suspended), "cost p50 \(fixed(cost, 1)) us (running: \(fixed(medianOf(\.adoptionCost), 1)) us)"])
    }

    var json: String {
        let unsupervised = medians(\.unsupervised), running = medians(\.running), suspended = medians(\.suspended)
        return figuresJSON(FlatFigures([
            PercentileFigures("unsupervised", p50: unsupervised.p50, p99: unsupervised.p99),
            PercentileFigures("running", p50: running.p50, p99: running.p99),
            PercentileFigures("suspended", p50: suspended.p50, p99: suspended.p99),
            BaresipFigures(adoptionCostP50: Rounded(medianOf(\.adoptionCost)), baresipWakesRuns: runs.map(\.wakes)),
        ]))
    }
}

/// baresip's own figures in a `sip` JSON line, after its modes' percentiles.
private struct BaresipFigures: Encodable {
    var adoptionCostP50: Rounded
    var baresipWakesRuns: [Int]

    enum CodingKeys: String, CodingKey {
        case adoptionCostP50 = "adoption_cost_p50_us", baresipWakesRuns = "baresip_wakes_runs"
    }
}

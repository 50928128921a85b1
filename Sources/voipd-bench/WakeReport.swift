import Foundation

/// The figures of one configuration: voipd's and the floor's, per run.
struct WakeResult {
    var apps: Int
    var placement: CPUPlacement
    var wakes: Int
    /// Threads flooding voipd with `status` requests during its runs, and the requests per
    /// second it answered them in each run.
    var controlFlood = 0
    var floodRates: [Double] = []
    /// voipd froze the apps' cgroups (against freeze_floor.c) rather than stopping them.
    var freezer = false
    /// (p50, p99) in microseconds, one per run.
    var ours: [(p50: Double, p99: Double)] = []
    var floor: [(p50: Double, p99: Double)] = []
    var setupSeconds: Double = 0
    var appRSSBytes: UInt64 = 0
    var appsPSSBytes: UInt64 = 0

    var p50: Double { median(ours.map(\.p50)) }
    var p99: Double { median(ours.map(\.p99)) }
    var floorP50: Double { median(floor.map(\.p50)) }
    var floorP99: Double { median(floor.map(\.p99)) }
    var ratioP50: Double { p50 / floorP50 }
    var ratioP99: Double { p99 / floorP99 }
    /// The issue's target: p50 within 1.5× the floor, p99 within 2×.
    var targetMet: Bool { ratioP50 <= 1.5 && ratioP99 <= 2 }

    var line: String {
        let runs = ours.count > 1 ? " (medians of \(ours.count) runs)" : ""
        let flood = controlFlood > 0 ? " flood=\(controlFlood) (\(Int(median(floodRates))) status/s)" : ""
        return "config apps=\(apps) cpu=\(placement.rawValue)\(freezer ? " suspension=freezer" : "")\(flood): ours p50 \(fixed(p50)) us p99 \(fixed(p99)) us"
            + " | floor p50 \(fixed(floorP50)) us p99 \(fixed(floorP99)) us"
            + " | ratio p50 \(fixed(ratioP50, 2)) p99 \(fixed(ratioP99, 2))\(runs)"
    }

    var json: String {
        jsonObject([
            ("test", "\"wake\""), ("apps", "\(apps)"), ("cpu_mode", "\(placement.rawValue)"), ("wakes", "\(wakes)"),
            ("suspension", freezer ? "\"freezer\"" : "\"signal\""),
            ("control_flood_threads", "\(controlFlood)"), ("control_flood_status_per_s", floodRates.isEmpty ? "0" : fixed(median(floodRates), 0)),
            ("runs", "\(ours.count)"), ("p50_us", fixed(p50)), ("p99_us", fixed(p99)),
            ("floor_p50_us", fixed(floorP50)), ("floor_p99_us", fixed(floorP99)),
            ("ratio_p50", fixed(ratioP50)), ("ratio_p99", fixed(ratioP99)), ("target_met", "\(targetMet)"),
            ("p50_us_runs", jsonArray(ours.map(\.p50))), ("p99_us_runs", jsonArray(ours.map(\.p99))),
            ("floor_p50_us_runs", jsonArray(floor.map(\.p50))), ("floor_p99_us_runs", jsonArray(floor.map(\.p99))),
            ("setup_s", fixed(setupSeconds)), ("app_rss_mb", fixed(Double(appRSSBytes) / 1_048_576, 1)),
            ("apps_pss_total_mb", fixed(Double(appsPSSBytes) / 1_048_576, 1)),
        ])
    }
}

/// voipd's context switches over an idle window with suspended apps.
struct IdleResult {
    var apps: Int
    var seconds: Int
    var voluntary: Int
    var involuntary: Int

    var total: Int { voluntary + involuntary }

    var line: String {
        "idle apps=\(apps) seconds=\(seconds): voipd context switches \(total) (voluntary \(voluntary), involuntary \(involuntary))"
    }

    var json: String {
        jsonObject([
            ("test", "\"idle\""), ("apps", "\(apps)"), ("seconds", "\(seconds)"), ("context_switches", "\(total)"),
            ("voluntary_ctxt_switches", "\(voluntary)"), ("nonvoluntary_ctxt_switches", "\(involuntary)"),
            ("target_met", "\(total == 0)"),
        ])
    }
}

/// A number with a fixed count of decimals.
func fixed(_ value: Double, _ places: Int = 3) -> String {
    value.isFinite ? String(format: "%.\(places)f", value) : "null"
}

/// Fields in the order given; values already in JSON.
func jsonObject(_ fields: [(String, String)]) -> String {
    "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
}

private func jsonArray(_ values: [Double]) -> String {
    "[" + values.map { fixed($0) }.joined(separator: ",") + "]"
}

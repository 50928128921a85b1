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
    /// The app woken: `voipd-bench app` (Swift) or `Benchmarks/wake_app.c` (C with libvoipd).
    var app = WakeAppKind.swift
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
        return "config app=\(app.rawValue) apps=\(apps) cpu=\(placement.rawValue)\(freezer ? " suspension=freezer" : "")\(flood): ours p50 \(fixed(p50)) us p99 \(fixed(p99)) us"
            + " | floor p50 \(fixed(floorP50)) us p99 \(fixed(floorP99)) us"
            + " | ratio p50 \(fixed(ratioP50, 2)) p99 \(fixed(ratioP99, 2))\(runs)"
    }

    var json: String { jsonLine(JSONFigures(self)) }

    /// The JSON line's figures: the medians, the verdict and every run's figures.
    private struct JSONFigures: Encodable {
        let test = "wake"
        var apps, cpuMode, wakes, runs, controlFloodThreads: Int
        var suspension, app: String
        var p50, p99, floorP50, floorP99, ratioP50, ratioP99: Rounded
        var targetMet: Bool
        var p50Runs, p99Runs, floorP50Runs, floorP99Runs: [Rounded]
        var controlFloodStatusPerSecond, setupSeconds, appRSS, appsPSSTotal: Rounded

        enum CodingKeys: String, CodingKey {
            case test, app, apps, wakes, suspension, runs
            case cpuMode = "cpu_mode"
            case controlFloodThreads = "control_flood_threads"
            case controlFloodStatusPerSecond = "control_flood_status_per_s"
            case p50 = "p50_us", p99 = "p99_us", floorP50 = "floor_p50_us", floorP99 = "floor_p99_us"
            case ratioP50 = "ratio_p50", ratioP99 = "ratio_p99", targetMet = "target_met"
            case p50Runs = "p50_us_runs", p99Runs = "p99_us_runs", floorP50Runs = "floor_p50_us_runs", floorP99Runs = "floor_p99_us_runs"
            case setupSeconds = "setup_s", appRSS = "app_rss_mb", appsPSSTotal = "apps_pss_total_mb"
        }

        init(_ result: WakeResult) {
            apps = result.apps
            cpuMode = result.placement.rawValue
            wakes = result.wakes
            suspension = result.freezer ? "freezer" : "signal"
            app = result.app.rawValue
            controlFloodThreads = result.controlFlood
            controlFloodStatusPerSecond = Rounded(result.floodRates.isEmpty ? 0 : median(result.floodRates), 0)
            runs = result.ours.count
            p50 = Rounded(result.p50)
            p99 = Rounded(result.p99)
            floorP50 = Rounded(result.floorP50)
            floorP99 = Rounded(result.floorP99)
            ratioP50 = Rounded(result.ratioP50)
            ratioP99 = Rounded(result.ratioP99)
            targetMet = result.targetMet
            p50Runs = result.ours.map { Rounded($0.p50) }
            p99Runs = result.ours.map { Rounded($0.p99) }
            floorP50Runs = result.floor.map { Rounded($0.p50) }
            floorP99Runs = result.floor.map { Rounded($0.p99) }
            setupSeconds = Rounded(result.setupSeconds)
            appRSS = .mebibytes(Double(result.appRSSBytes))
            appsPSSTotal = .mebibytes(Double(result.appsPSSBytes))
        }
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
        jsonLine(JSONFigures(apps: apps, seconds: seconds, contextSwitches: total, voluntary: voluntary, involuntary: involuntary,
                         targetMet: total == 0))
    }

    private struct JSONFigures: Encodable {
        let test = "idle"
        var apps, seconds, contextSwitches, voluntary, involuntary: Int
        var targetMet: Bool

        enum CodingKeys: String, CodingKey {
            case test, apps, seconds
            case contextSwitches = "context_switches", voluntary = "voluntary_ctxt_switches"
            case involuntary = "nonvoluntary_ctxt_switches", targetMet = "target_met"
        }
    }
}

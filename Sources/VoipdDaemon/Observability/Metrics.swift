/// Counters for `voipctl stats`.
struct Metrics: Codable {
    var wakes = 0
    var transitions = 0
    var relaunches = 0
    var reclaimedSockets = 0
    var memoryPressureKills = 0
    var protocolErrors = 0
    var watchdogKills = 0
    var kills = 0
    /// From data seen on a suspended app's VoIP socket to the app's acknowledgement of
    /// voipSocketReadable: the wake as the app lives it.
    var wakeLatency = Histogram(bounds: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])

    mutating func count(kill reason: String) {
        kills += 1
        if reason.hasPrefix("watchdog") { watchdogKills += 1 }
    }
}

extension Daemon {
    /// The Prometheus text exposition format.
    func prometheusText() -> String {
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for sample in samples { lines.append("\(name)\(sample.labels) \(sample.value)") }
        }
        let states = Dictionary(grouping: apps.values, by: { $0.lifecycle.state })
        metric("voipd_apps", "gauge", "Apps by state.", AppStateNames.all.map { state in
            ("{state=\"\(state)\"}", "\(states.first { $0.key.rawValue == state }?.value.count ?? 0)")
        })
        metric("voipd_held_sockets", "gauge", "VoIP sockets held.", [("", "\(registry.count)")])
        metric("voipd_wakes_total", "counter", "Wakes delivered (voipSocketReadable and keepAlive).", [("", "\(metrics.wakes)")])
        metric("voipd_transitions_total", "counter", "App state transitions.", [("", "\(metrics.transitions)")])
        metric("voipd_relaunches_total", "counter", "Apps relaunched by voipd.", [("", "\(metrics.relaunches)")])
        metric("voipd_kills_total", "counter", "SIGKILLs sent.", [("", "\(metrics.kills)")])
        metric("voipd_wake_latency_seconds", "histogram",
               "From data on a suspended app's VoIP socket to the app acknowledging voipSocketReadable.",
               metrics.wakeLatency.samples)
        metric("voipd_watchdog_kills_total", "counter", "Apps killed by the watchdog.", [("", "\(metrics.watchdogKills)")])
        metric("voipd_reclaimed_sockets_total", "counter", "Ordinary sockets reclaimed.", [("", "\(metrics.reclaimedSockets)")])
        metric("voipd_memory_pressure_kills_total", "counter", "Apps ended by memory pressure.", [("", "\(metrics.memoryPressureKills)")])
        metric("voipd_protocol_errors_total", "counter", "Requests refused as malformed or invalid.", [("", "\(metrics.protocolErrors)")])
        metric("voipd_clients", "gauge", "Connections on the control socket.", [("", "\(clients.count)")])
        metric("voipd_quota_refusals_total", "counter", "Connections, apps and sockets refused by a per-user limit.", [("", "\(clients.admission.quotaRefusals)")])
        metric("voipd_accept_pauses_total", "counter", "Times voipd stopped accepting connections, out of descriptors.", [("", "\(clients.admission.pauses)")])
        metric("voipd_client_queue_overflows_total", "counter", "Connections closed for not reading what voipd sent them.", [("", "\(clients.queues.overflows)")])
        metric("voipd_client_queue_bytes", "gauge", "Bytes waiting for connections to read them.", [("", "\(clients.queues.totalBytes)")])
        metric("voipd_hello_timeouts_total", "counter", "Connections closed after limits.helloTimeout without a request.", [("", "\(clients.admission.helloTimeouts)")])
        if transfers != nil || (!transfersTried && configuration.transfers.enabled && transferDirectory != nil) {
            transferMetrics(transfers, metric)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// A Prometheus histogram: cumulative counts per upper bound, the sum and the count.
struct Histogram: Codable {
    let bounds: [Double]
    private(set) var counts: [Int]
    private(set) var sum = 0.0
    private(set) var count = 0

    init(bounds: [Double]) {
        self.bounds = bounds
        counts = Array(repeating: 0, count: bounds.count)
    }

    mutating func observe(_ value: Double) {
        if let bucket = bounds.firstIndex(where: { value <= $0 }) { counts[bucket] += 1 }
        sum += value
        count += 1
    }

    /// The text exposition's samples: `_bucket{le=…}` (cumulative), `_sum`, `_count`.
    var samples: [(labels: String, value: String)] {
        var cumulative = 0
        var result: [(String, String)] = []
        for (bound, n) in zip(bounds, counts) {
            cumulative += n
            result.append(("_bucket{le=\"\(bound)\"}", "\(cumulative)"))
        }
        result.append(("_bucket{le=\"+Inf\"}", "\(count)"))
        result.append(("_sum", "\(sum)"))
        result.append(("_count", "\(count)"))
        return result
    }
}

import VoipdLifecycle
import VoipdVocabulary

enum AppStateNames {
    static let all = AppState.allCases.map(\.rawValue)
}

/// Counters for `voipctl stats`.
struct Metrics: Codable {
    var wakes = 0
    var transitions = 0
    var relaunches = 0
    var reclaimedSockets = 0
    var memoryPressureKills = 0
    var pressureEvents = 0
    var protocolErrors = 0
    var watchdogKills = 0
    var kills = 0

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
        metric("voipd_watchdog_kills_total", "counter", "Apps killed by the watchdog.", [("", "\(metrics.watchdogKills)")])
        metric("voipd_reclaimed_sockets_total", "counter", "Ordinary sockets reclaimed.", [("", "\(metrics.reclaimedSockets)")])
        metric("voipd_memory_pressure_kills_total", "counter", "Apps ended by memory pressure.", [("", "\(metrics.memoryPressureKills)")])
        metric("voipd_protocol_errors_total", "counter", "Requests refused as malformed or invalid.", [("", "\(metrics.protocolErrors)")])
        metric("voipd_clients", "gauge", "Connections on the control socket.", [("", "\(clients.count)")])
        return lines.joined(separator: "\n") + "\n"
    }
}

import VoipdLifecycle

enum AppStateNames {
    static let all = AppState.allCases.map(\.rawValue)
}

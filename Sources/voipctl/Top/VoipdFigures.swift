import FoundationEssentials
import VoipdVocabulary

/// voipd's own figures for the header of `voipctl top`: its process (from /proc, found by
/// the credentials of the control connection) and its counters (`stats`).
struct VoipdFigures: Encodable {
    var pid: Int32?
    var uptimeSeconds: Double?
    var cpuPercent: Double?
    var residentBytes: UInt64?
    /// Apps by state.
    var apps: [String: Int] = [:]
    var clients: Int?
    var heldSockets: Int?
    var wakes: Int?
    var transitions: Int?
    var kills: Int?
    /// The mean of `voipd_wake_latency_seconds`: data on a held socket to the app's acknowledgement.
    var meanWakeLatencySeconds: Double?

    /// Reads the counters of the Prometheus text `stats` returns.
    mutating func read(prometheus text: String) {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        func count(_ name: String) -> Int? { samples[name].map { Int($0) } }
        apps = Dictionary(uniqueKeysWithValues: AppState.allCases.compactMap { state in
            count("voipd_apps{state=\"\(state.rawValue)\"}").map { (state.rawValue, $0) }
        })
        clients = count("voipd_clients")
        heldSockets = count("voipd_held_sockets")
        wakes = count("voipd_wakes_total")
        transitions = count("voipd_transitions_total")
        kills = count("voipd_kills_total")
        if let sum = samples["voipd_wake_latency_seconds_sum"], let n = samples["voipd_wake_latency_seconds_count"], n > 0 {
            meanWakeLatencySeconds = sum / n
        } else {
            meanWakeLatencySeconds = nil
        }
    }

    /// Two lines: the process, then the apps and counters.
    var header: [String] {
        func or(_ value: (some Any)?) -> String { value.map { "\($0)" } ?? "-" }
        var process = ["voipd pid \(or(pid))"]
        process.append("up \(uptimeSeconds.map(TopValue.elapsed) ?? "-")")
        process.append("CPU \(cpuPercent.map { formatted("%.1f%%", $0) } ?? "-")")
        process.append("mem \(residentBytes.map(TopValue.bytes) ?? "-")")
        process.append("clients \(or(clients))")
        process.append("held sockets \(or(heldSockets))")
        let total = apps.values.reduce(0, +)
        let states = AppState.allCases.compactMap { state in apps[state.rawValue].flatMap { $0 > 0 ? "\($0) \(state.rawValue)" : nil } }
        var counters = ["apps \(total)" + (states.isEmpty ? "" : ": " + states.joined(separator: ", "))]
        counters.append("wakes \(or(wakes))")
        counters.append("transitions \(or(transitions))")
        counters.append("kills \(or(kills))")
        counters.append("wake latency \(meanWakeLatencySeconds.map { formatted("%.2f ms", $0 * 1000) } ?? "-") mean")
        return [process.joined(separator: " · "), counters.joined(separator: " · ")]
    }
}

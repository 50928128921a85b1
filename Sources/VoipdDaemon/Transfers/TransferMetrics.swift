import VoipdTransfers

extension Daemon {
    /// Background transfers' part of `voipctl stats` (docs/PROTOCOL.md, `stats`): the tasks
    /// by phase and the agents now, and counters since voipd started. Without a host (the
    /// service not brought up yet: no request has needed it, and its store held no task at
    /// start) every figure is 0, as the service's would be.
    func transferMetrics(_ host: TransferHost?, _ metric: (String, String, String, [(labels: String, value: String)]) -> Void) {
        let engine = host?.service.engine
        let statistics = engine?.statistics ?? TransferStatistics()
        var phases = ["waiting": 0, "running": 0, "challenged": 0, "finished": 0]
        for task in engine.map({ Array($0.tasks.values) }) ?? [] {
            switch task.phase {
            case .waiting: phases["waiting", default: 0] += 1
            case .running: phases["running", default: 0] += 1
            case .challenged: phases["challenged", default: 0] += 1
            case .finished: phases["finished", default: 0] += 1
            }
        }
        metric("voipd_transfer_tasks", "gauge", "Background transfer tasks by phase (finished: not yet handed over).",
               phases.sorted { $0.key < $1.key }.map { ("{phase=\"\($0.key)\"}", "\($0.value)") })
        metric("voipd_transfer_agents", "gauge", "Transfer agents (voipd-transfer) running.", [("", "\(host?.service.agentProcesses.count ?? 0)")])
        metric("voipd_transfer_bytes_total", "counter", "Bytes background transfers moved, sent and received.", [("", "\(statistics.bytes)")])
        metric("voipd_transfer_attempts_total", "counter", "Transfer attempts started (a retry or a resumption is one more).",
               [("", "\(statistics.attemptsStarted)")])
        let results = ["succeeded", "http", "network", "timedOut", "cancelled", "file"]
        metric("voipd_transfer_completions_total", "counter", "Background transfer tasks ended, by result.",
               results.map { ("{result=\"\($0)\"}", "\(statistics.completions[$0] ?? 0)") })
        metric("voipd_transfer_wakes_total", "counter", "Apps resumed or relaunched to hand over transfer events.",
               [("{wake=\"resume\"}", "\(statistics.resumes)"), ("{wake=\"relaunch\"}", "\(statistics.relaunches)")])
    }
}

import Glibc
import VoipdProtocol
import VoipdSystem

/// What `voipctl top` knows of one app: voipd's status, its last transition, and the CPU
/// figures read from /proc.
struct TopRow {
    let status: AppStatus
    let lastTransition: TransitionRecord?
    let cpu: CPUFigures?
    /// Since the last state change (the status's `since`, on the wall clock).
    let secondsInState: Double

    static func describe(_ transition: TransitionRecord) -> String {
        "\(transition.from.rawValue) → \(transition.to.rawValue): \(transition.reason)"
    }

    /// The row's cells in the order of ``TopColumn/all``.
    func values(_ columns: [TopColumn] = TopColumn.all) -> [TopValue] { columns.map { $0.value(self) } }
}

/// A process's CPU use: over the last interval, and in all.
struct CPUFigures {
    /// Percent of one CPU since the previous reading (over the process's life for the first
    /// reading, as ps(1) shows it).
    let percent: Double
    let total: Duration
}

/// Readings of /proc/PID/stat kept from one refresh to the next, to turn CPU time into a
/// rate. Only the pids seen in the last refresh are kept.
struct CPUSampler {
    private struct Reading {
        /// With the pid, names one process (a pid can be reused).
        let started: Duration
        let cpu: Duration
        let at: Duration
    }

    private var previous: [pid_t: Reading] = [:]

    /// The figures of each pid that can be read now.
    mutating func sample(_ pids: [pid_t]) -> [pid_t: CPUFigures] {
        guard let now = ProcFS.uptime else { return [:] }
        var figures: [pid_t: CPUFigures] = [:]
        var readings: [pid_t: Reading] = [:]
        for pid in pids {
            guard let started = ProcFS.startedAfterBoot(pid), let cpu = ProcFS.cpuTime(of: pid) else { continue }
            var since = Reading(started: started, cpu: .zero, at: started)
            if let earlier = previous[pid], earlier.started == started { since = earlier }
            let elapsed = (now - since.at).seconds
            figures[pid] = CPUFigures(percent: elapsed > 0 ? max(0, (cpu - since.cpu).seconds) / elapsed * 100 : 0, total: cpu)
            readings[pid] = Reading(started: started, cpu: cpu, at: now)
        }
        previous = readings
        return figures
    }
}

import Glibc
import VoipdSystem

/// What a process cost over a stretch of time in which it had nothing to do but its own
/// timers, from /proc: CPU time and context switches (each one the thread waiting and being
/// woken again, or being preempted), summed over its threads.
struct IdleCost {
    let window: Duration
    let cpuTime: Duration
    let contextSwitches: Int

    /// Handles the demo's events (the servers keep answering) for `window`, reading the
    /// process's usage before and after.
    static func measure(_ pid: pid_t, for window: Duration, on pump: EventPump) throws -> IdleCost {
        guard let before = ProcFS.usage(of: pid) else { throw DemoFailure("cannot read /proc/\(pid)/task") }
        let start = ContinuousClock.now
        try pump.run(for: window)
        guard let after = ProcFS.usage(of: pid) else { throw DemoFailure("cannot read /proc/\(pid)/task") }
        let spent = after.since(before)
        return IdleCost(window: .now - start, cpuTime: spent.cpuTime, contextSwitches: spent.contextSwitches)
    }
}

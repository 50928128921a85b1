import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// The daemon's timers: their schedule, and the one timerfd that fires for the earliest.
final class DaemonTimers {
    let timerfd: TimerFd
    private var schedule = TimerSchedule<DaemonTimer>()
    /// The deadline the timerfd is armed for, to skip re-arming it for nothing.
    private var armedDeadline: MonotonicInstant?
    /// Whether a timer was set, cancelled or taken since the last ``rearm()``: a turn of the
    /// loop that changed none (most requests) does not look for the earliest deadline again.
    /// Stays set while the timerfd cannot be armed, so that every turn tries again.
    private var changed = true
    /// The earliest deadline, while the timerfd could not be armed for it: the loop's wait
    /// ends by then instead (``Daemon/loopWait``), and the loop fires what is due
    /// (``Daemon/fireTimersTheTimerfdMissed()``). Nil when the timerfd is armed as it should be.
    private(set) var unarmedDeadline: MonotonicInstant?
    /// Whether the last ``rearm()`` failed (for a log that says it once).
    private(set) var failing = false

    init() throws {
        timerfd = try TimerFd()
    }

    func set(_ key: DaemonTimer, deadline: MonotonicInstant, tolerance: Duration = .zero) {
        schedule.set(key, deadline: deadline, tolerance: tolerance)
        changed = true
    }

    func cancel(_ key: DaemonTimer) {
        schedule.cancel(key)
        changed = true
    }

    func contains(_ key: DaemonTimer) -> Bool { schedule.contains(key) }

    func deadline(of key: DaemonTimer) -> MonotonicInstant? { schedule.deadline(of: key) }

    var all: [(key: DaemonTimer, deadline: MonotonicInstant, tolerance: Duration)] { schedule.all }

    /// Arms the timerfd for the earliest deadline (or disarms it), unless it is armed for it
    /// already. When the kernel refuses, the deadline is kept in ``unarmedDeadline`` and the
    /// next call tries again: a deadline is never lost (an app never suspended, a keep-alive
    /// that never comes).
    func rearm() throws {
        guard changed else { return }
        let earliest = schedule.earliestDeadline()
        if earliest != armedDeadline {
            do {
                if let earliest {
                    try timerfd.arm(at: earliest)
                } else {
                    try timerfd.disarm()
                }
            } catch {
                // Armed as before, if at all: an early expiry finds nothing due, and is harmless.
                unarmedDeadline = earliest
                failing = true
                throw error
            }
            armedDeadline = earliest
        }
        changed = false
        unarmedDeadline = nil
        failing = false
    }

    /// Reads the timerfd's expiry count: it is armed for nothing now.
    func acknowledge() throws {
        defer {
            armedDeadline = nil
            changed = true
        }
        _ = try timerfd.acknowledge()
    }

    /// The timers due at `now`, taken off the schedule.
    func takeDue(at now: MonotonicInstant) -> [DaemonTimer] {
        changed = true
        return schedule.takeDue(at: now)
    }
}

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
    private var changed = true

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

    var all: [(key: DaemonTimer, deadline: MonotonicInstant, tolerance: Duration)] { schedule.all }

    /// Arms the timerfd for the earliest deadline (or disarms it), unless it is armed for it already.
    func rearm() throws {
        guard changed else { return }
        changed = false
        let earliest = schedule.earliestDeadline()
        guard earliest != armedDeadline else { return }
        armedDeadline = earliest
        if let earliest {
            try timerfd.arm(at: earliest)
        } else {
            try timerfd.disarm()
        }
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

import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// The daemon's timers: their schedule, and the one timerfd that fires for the earliest.
final class DaemonTimers {
    let timerfd: TimerFd
    private var schedule = TimerSchedule<DaemonTimer>()
    /// The deadline the timerfd is armed for, to skip re-arming it for nothing.
    private var armedDeadline: MonotonicInstant?

    init() throws {
        timerfd = try TimerFd()
    }

    func set(_ key: DaemonTimer, deadline: MonotonicInstant, tolerance: Duration = .zero) {
        schedule.set(key, deadline: deadline, tolerance: tolerance)
    }

    func cancel(_ key: DaemonTimer) { schedule.cancel(key) }

    func contains(_ key: DaemonTimer) -> Bool { schedule.contains(key) }

    var all: [(key: DaemonTimer, deadline: MonotonicInstant, tolerance: Duration)] { schedule.all }

    /// Arms the timerfd for the earliest deadline (or disarms it), unless it is armed for it already.
    func rearm() throws {
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
        defer { armedDeadline = nil }
        _ = try timerfd.acknowledge()
    }

    /// The timers due at `now`, taken off the schedule.
    func takeDue(at now: MonotonicInstant) -> [DaemonTimer] { schedule.takeDue(at: now) }
}

import CVoipd
import Glibc

/// What a process that voipd stopped with SIGSTOP has done since: anyone's SIGCONT resumes a
/// stopped process (a shell's `fg`, `kill -CONT`, a debugger), and the app then runs behind
/// voipd's back. Taken when voipd confirms the stop, checked later, for any process (voipd's
/// child or not): one read of /proc/PID/stat and one of /proc/PID/schedstat, a few µs each.
///
/// Its evidence is the main thread's count of times on a CPU (the third field of
/// /proc/PID/schedstat): a stopped task is never scheduled, and a SIGCONT wakes every
/// stopped thread, which runs at least once. So a count that moved means the process ran,
/// even if someone stopped it again since (which the state alone cannot show).
///
/// To be told at once rather than at the next look, a parent has SIGCHLD with CLD_CONTINUED
/// (its children's continues are reported unless SA_NOCLDSTOP is set), and then
/// ``PidFd/takeContinuedReport()``, which says which child it was: the signal's own siginfo
/// names only one of several coalesced ones.
public struct StopWitness: Sendable, Equatable {
    public let pid: pid_t
    /// Times the main thread had been scheduled when the stop was confirmed.
    public let runCount: UInt64

    /// Takes the witness of a stopped process; nil if it is not stopped ('T') or gone.
    public init?(stoppedProcess pid: pid_t) {
        guard ProcFS.state(of: pid) == "T", let count = Self.runCount(of: pid) else { return nil }
        self.pid = pid
        runCount = count
    }

    /// What the process has done since the witness was taken.
    public func check() -> StopCheck {
        // The state first: a task continued a moment ago may not have run yet, but it is no
        // longer 'T'.
        guard let state = ProcFS.state(of: pid), state != "Z", let count = Self.runCount(of: pid) else { return .gone }
        if state != "T" { return .resumed(state: state) }
        return count == runCount ? .stillStopped : .ranAndStoppedAgain
    }

    /// The third field of /proc/PID/schedstat (`pcount`: times the task ran on a CPU).
    static func runCount(of pid: pid_t) -> UInt64? {
        guard let text = ProcFS.read("/proc/\(pid)/schedstat") else { return nil }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count >= 3 else { return nil }
        return UInt64(fields[2])
    }
}

/// What a process voipd stopped has done since (``StopWitness/check()``).
public enum StopCheck: Sendable, Equatable, CustomStringConvertible {
    /// Stopped, and it has not run since.
    case stillStopped
    /// Someone continued it: it is running or waiting now (its state letter: R, S, D…).
    case resumed(state: Character)
    /// Stopped now, but it ran in between: continued and stopped again by someone else.
    case ranAndStoppedAgain
    /// It has ended.
    case gone

    public var description: String {
        switch self {
        case .stillStopped: return "still stopped"
        case .resumed(let state): return "resumed by someone else (state \(state))"
        case .ranAndStoppedAgain: return "ran while it should have been stopped, and is stopped again"
        case .gone: return "gone"
        }
    }
}

extension PidFd {
    /// For a child: whether the kernel holds a "continued" report for it, taking the report
    /// (`waitid(P_PIDFD, WCONTINUED | WNOHANG)`). The kernel keeps one from the last SIGCONT
    /// that resumed the child until a wait takes it or the child stops again; so for a child
    /// stopped and not continued by voipd since, true means someone else continued it.
    public func takeContinuedReport() throws -> Bool {
        var info = siginfo_t()
        _ = try valueOrErrno("waitid(P_PIDFD, WCONTINUED)") { voipd_waitid_pidfd(descriptor.rawValue, &info, WCONTINUED | WNOHANG) }
        return voipd_siginfo_pid(&info) != 0 && voipd_siginfo_code(&info) == CLD_CONTINUED
    }
}

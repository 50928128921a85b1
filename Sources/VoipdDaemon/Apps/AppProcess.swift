import Glibc
import VoipdSystem

/// A running process of an app, tracked by pidfd. The pidfd stays open until the process
/// is reaped, so its pid cannot be reused under us.
final class AppProcess {
    let pidfd: PidFd
    /// Started by voipd: its stops and exits are reported to voipd (SIGCHLD, waitid).
    let isChild: Bool
    var token: UInt64 = 0
    /// Delay before the next look at /proc for a stop that no SIGCHLD will confirm.
    var stopCheckDelay: Duration = .milliseconds(1)
    /// Signals go to its whole process group: voipd launched it as the leader of a session
    /// of its own (an earlier voipd may have: then it is no longer voipd's child).
    let signalsGroup: Bool
    /// Pid, start time and uid, for the state file (read once, when first needed).
    var identity: ProcessIdentity?
    /// The app's cgroup when voipd suspends it with the cgroup freezer (``AppSuspender``).
    var cgroup: AppCgroupBox?
    /// Set when voipd confirms its SIGSTOP, dropped when voipd continues it: what shows
    /// that someone else continued it meanwhile (``Daemon/noticeUnexpectedResume(of:restop:)``).
    var stopEvidence: StopEvidence?
    /// While a freeze awaits confirmation: when to read its cgroup's state again.
    var freezeConfirmation: FreezeConfirmation?
    /// While a freeze awaits confirmation under cgroup v2: the registration of the cgroup's
    /// `cgroup.events` for `EPOLLPRI`.
    var freezeWatch: UInt64?

    /// Whether the kernel reports its stops to voipd (SIGCHLD): only a child voipd stops with
    /// SIGSTOP; other stops are confirmed by looking.
    var stopsAreReported: Bool { isChild && cgroup == nil }

    init(pidfd: consuming PidFd, isChild: Bool, signalsGroup: Bool? = nil) {
        self.pidfd = pidfd
        self.isChild = isChild
        self.signalsGroup = signalsGroup ?? isChild
    }

    var pid: pid_t { pidfd.pid }

    /// Signals the app: a process voipd launched leads a session and process group of its
    /// own, and the whole group gets the signal, so helpers it started stop and die with
    /// it. A process voipd did not start gets it alone, through its pidfd.
    func send(_ signal: CInt) throws {
        if signal == SIGKILL, let cgroup {
            // The whole cgroup: helpers that left the process group die too.
            return try cgroup.cgroup.killAll()
        }
        if signalsGroup {
            // The group's id is the leader's pid, which cannot be reused while the leader is
            // voipd's unreaped child; a leader that is not voipd's child is first checked to
            // be alive through its pidfd.
            if !isChild { try pidfd.send(0) }
            try signalProcessGroup(pid, signal)
        } else {
            try pidfd.send(signal)
        }
    }
}

extension AppProcess {
    /// The app's processes, at most `limit`: its cgroup's members when it has one (helpers
    /// that double-forked or called `setsid` to leave its process tree are found too),
    /// otherwise this process and those below it.
    func members(limit: Int) throws -> ProcessTree {
        if let box = cgroup { return try ProcessTree.inCgroup(box.cgroup.path, limit: limit) }
        return try ProcessTree.below(pid, limit: limit)
    }
}

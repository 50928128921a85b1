import Glibc

/// What taking another process's descriptor needs. `pidfd_getfd(2)` checks ptrace access
/// in mode `PTRACE_MODE_ATTACH_REALCREDS`, the check of `ptrace(PTRACE_ATTACH)` itself,
/// against voipd's real uid and gid:
/// - without `CAP_SYS_PTRACE`, the target must have voipd's real uid and gid as all of its
///   real, effective and saved ids, and be dumpable (not set-uid, no `PR_SET_DUMPABLE 0`,
///   no file capabilities); with `CAP_SYS_PTRACE` (root, or voipd's unit) any process will
///   do. A program voipd launched as voipd's own user passes; one launched as another user
///   (`"user"` in its manifest) needs voipd's `CAP_SYS_PTRACE`;
/// - then Linux security modules decide, of which Yama (``YamaPtraceScope``) is the one
///   that commonly refuses;
/// - reading /proc/PID/fd only needs the lighter `PTRACE_MODE_READ_FSCREDS`, which Yama
///   does not restrict: voipd can see sockets it is not allowed to take.
public enum YamaPtraceScope: Int, Sendable, CaseIterable, CustomStringConvertible {
    /// 0, "classic": the uid and dumpable rules above only.
    case classic = 0
    /// 1, "restricted" (the default of Debian and Ubuntu): the target must also descend
    /// from voipd (a program it launched, as long as the process stays in voipd's tree), or
    /// have named voipd with `PR_SET_PTRACER`; `CAP_SYS_PTRACE` lifts the restriction. A
    /// program whose launcher exited (a double fork) is no longer below voipd.
    case restricted = 1
    /// 2, "admin-only": only with `CAP_SYS_PTRACE`.
    case adminOnly = 2
    /// 3, "no attach": never, not even for root, until the next boot: adoption cannot take
    /// sockets at all.
    case noAttach = 3

    /// The current setting (/proc/sys/kernel/yama/ptrace_scope), or nil when Yama is not in
    /// the kernel (then only the uid and dumpable rules apply).
    public static func current() -> YamaPtraceScope? {
        guard let text = ProcFS.read("/proc/sys/kernel/yama/ptrace_scope"),
              let value = Int(text.filter(\.isNumber)) else { return nil }
        return YamaPtraceScope(rawValue: value)
    }

    /// Whether voipd may take descriptors of the programs it launched, given whether it has
    /// `CAP_SYS_PTRACE` (the uid and dumpable rules still apply on top).
    public func allowsLaunchedPrograms(withPtraceCapability capability: Bool) -> Bool {
        switch self {
        case .classic, .restricted: return true
        case .adminOnly: return capability
        case .noAttach: return false
        }
    }

    public var description: String {
        switch self {
        case .classic: return "Yama ptrace_scope 0 (classic)"
        case .restricted: return "Yama ptrace_scope 1 (restricted to descendants)"
        case .adminOnly: return "Yama ptrace_scope 2 (CAP_SYS_PTRACE only)"
        case .noAttach: return "Yama ptrace_scope 3 (no attach)"
        }
    }
}

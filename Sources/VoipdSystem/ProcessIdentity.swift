import Glibc

/// What names one process for the life of the system, beyond its reusable pid: the pid,
/// when it started, and whose it is. A process whose pid was reused is a different
/// process: its start time differs.
public struct ProcessIdentity: Codable, Hashable, Sendable {
    public var pid: pid_t
    /// Clock ticks after boot (field 22 of /proc/PID/stat).
    public var startTime: UInt64
    /// The real uid.
    public var uid: uid_t

    public init(pid: pid_t, startTime: UInt64, uid: uid_t) {
        self.pid = pid
        self.startTime = startTime
        self.uid = uid
    }
}

extension PidFd {
    /// The identity of the process this pidfd refers to, read from /proc through its pid;
    /// nil once the process has ended (a zombie has: it only waits to be collected). The
    /// pidfd pins the process, not its number: after the process is reaped the number may
    /// name another one, so the read is confirmed by a null signal through the pidfd
    /// afterwards (the process was still there, so /proc showed it).
    public func identity() -> ProcessIdentity? {
        guard let fields = ProcFS.statFields(pid), fields.count > 19, fields[0] != "Z", fields[0] != "X",
              let startTime = UInt64(fields[19]), let uid = ProcFS.realUserID(of: pid) else { return nil }
        do {
            try send(0)
        } catch .noSuchProcess {
            // It ended meanwhile, and what /proc showed may be another process.
            return nil
        } catch {
            // EPERM: it is there, only not ours to signal.
        }
        return ProcessIdentity(pid: pid, startTime: startTime, uid: uid)
    }
}

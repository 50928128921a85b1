/// When to read a cgroup's state again while a freeze is not confirmed, so that a loop that
/// must never block learns of it soon without spinning:
///
/// 1. read at once after writing the freeze: a task asleep (an app idle in `epoll_wait` or
///    `read`) is frozen within the write, so this is usually the confirmation;
/// 2. then re-read on a timer, 50 µs, doubling (100, 200 µs … 6.4 ms), for a task that was
///    running and freezes as it next leaves the kernel (a few µs to a scheduler tick);
/// 3. under v2, once the re-reads are over, register the cgroup's ``AppCgroup/stateFile``
///    for `EPOLLPRI` (only while a freeze awaits confirmation, so that thaws do not wake the
///    loop): the kernel's notification is the last word. It is rate-limited to one per
///    10 ms per file, later ones deferred to the end of that interval, which is why the
///    timer comes first, and alone: the notification of a freeze shortly after a thaw comes
///    ~10–20 ms late, after the re-reads, so registering it earlier would cost two
///    `epoll_ctl` per suspension for nothing.
///
/// After about 13 ms of re-reads (8 of them, ~7 µs each), v2 relies on the notification
/// alone: a freeze that takes longer (a task in uninterruptible sleep: D state, NFS, a
/// FUSE server that is itself frozen) is reported whenever it completes, and the lifecycle's
/// own deadline for a stop decides what then. v1 sends no notification: its re-reads go on,
/// every 100 ms at most, until the freeze completes or the caller gives up.
public struct FreezeConfirmation: Sendable, Equatable {
    public let version: CgroupVersion
    /// The first timed re-read; each following one waits twice as long as the one before.
    public let firstDelay: Duration
    /// Re-reads done so far after the first one.
    public private(set) var rereads = 0

    public init(version: CgroupVersion, firstDelay: Duration = Self.defaultFirstDelay) {
        self.version = version
        self.firstDelay = firstDelay
    }

    /// The first timed re-read's delay by default.
    public static let defaultFirstDelay: Duration = .microseconds(50)
    /// v2's timed re-reads; after them only the kernel's notification.
    public static let v2Rereads = 8
    /// The longest wait between two of v1's re-reads.
    public static let v1LongestDelay: Duration = .milliseconds(100)

    /// How long to wait before the next re-read, counting it as done; nil when there is no
    /// more to do but wait for `EPOLLPRI` (v2).
    public mutating func nextDelay() -> Duration? {
        if version == .v2 && rereads >= Self.v2Rereads { return nil }
        let exponent = min(rereads, 16)
        rereads += 1
        let delay = firstDelay * (1 << exponent)
        return version == .v1 ? min(delay, Self.v1LongestDelay) : delay
    }

    /// Whether the cgroup's change notification should be armed (`EPOLLPRI`) once the
    /// re-reads are over (``nextDelay()`` returned nil) and while the freeze is unconfirmed.
    public var watchesNotification: Bool { version == .v2 }
}

import Glibc
import VoipdLifecycle
import VoipdVocabulary

/// Everything voipd knows about one app, alive or not.
final class AppRecord {
    let name: String
    /// The uid that owns it: only this uid or root may act on it.
    var uid: uid_t
    /// Known only by sockets a service manager gave back, with no manifest: the first
    /// app to say hello under its name claims it (the fd store keeps no owner).
    var unclaimed = false
    var lifecycle: AppLifecycle
    var process: AppProcess?
    var launch: LaunchSpecification?
    /// The client connection it identified itself on.
    var client: UInt64?
    var reclaimedSockets = 0
    /// Sockets already reclaimed (by inode), so a second reclaim does not count them again.
    var reclaimedInodes: Set<UInt64> = []
    /// Wall-clock time of the last state change.
    var since: Double
    /// When the data that woke the app was seen, and the event that told it: the wake's
    /// latency is measured to its acknowledgement.
    var wakeSeenAt: MonotonicInstant?
    var wakeEvent: (id: UInt64, seenAt: MonotonicInstant)?
    /// `launch` requests waiting for the app to connect: (client, request id).
    var launchWaiters: [(client: UInt64, request: UInt64)] = []

    init(name: String, uid: uid_t, lifecycle: AppLifecycle, since: Double) {
        self.name = name
        self.uid = uid
        self.lifecycle = lifecycle
        self.since = since
    }
}

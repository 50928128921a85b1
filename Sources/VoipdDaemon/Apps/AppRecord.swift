import Glibc
import VoipdLifecycle
import VoipdVocabulary

/// A request answered later, once something has happened: the connection it came on and its id.
struct PendingReply: Codable, Equatable {
    var client: UInt64
    var request: UInt64
}

/// Everything voipd knows about one app, alive or not.
///
/// What an in-place upgrade carries over is the app's ``State`` and its ``lifecycle`` as
/// they are (Codable); its process and launch go with their descriptors. A field added to
/// `State` survives an upgrade by itself. A field added to the class beside it does not:
/// keep there only what is rebuilt after an upgrade or may be lost with it.
@dynamicMemberLookup
final class AppRecord {
    /// The app's own bookkeeping, read and written as the record's fields (`app.uid`).
    struct State: Codable, Equatable {
        /// The uid that owns it: only this uid or root may act on it.
        var uid: uid_t
        /// Known only by sockets a service manager gave back, with no manifest: the first
        /// app to say hello under its name claims it (the fd store keeps no owner).
        var unclaimed = false
        /// The client connection it identified itself on.
        var client: UInt64?
        var reclaimedSockets = 0
        /// Sockets already reclaimed (by inode), so a second reclaim does not count them again.
        var reclaimedInodes: Set<UInt64> = []
        /// Wall-clock time of the last state change.
        var since: Double
        /// `launch` requests waiting for the app to connect.
        var launchWaiters: [PendingReply] = []
        /// How long the app said it stays reachable without a wake, with its keep-alive
        /// (scaled; nil: it did not say).
        var reachableFor: Duration?
    }

    let id: AppID
    var state: State
    /// Beside ``state`` (and carried with it): the wake path reaches it directly.
    var lifecycle: AppLifecycle
    var process: AppProcess?
    var launch: LaunchSpecification?
    /// When the data that woke the app was seen, and the event that told it: the wake's
    /// latency is measured to its acknowledgement. Not carried: a wake in flight across an
    /// upgrade is not measured.
    var wakeSeenAt: MonotonicInstant?
    var wakeEvent: (id: UInt64, seenAt: MonotonicInstant)?
    /// A program adopted without its cooperation: the copies voipd holds of its sockets and
    /// its quiet detector. Not carried: an upgrade loses it (docs/LIFECYCLE.md, "Adopted programs").
    var adoption: AdoptedProgram?
    /// The keep-alive the voipd that died recorded for the app's process (the service
    /// manager's store, the state file): it goes on if that process is taken back suspended
    /// (``Daemon/keepOrResumeStoppedSurvivors(recorded:)``), which cannot ask for it again.
    /// Not carried: used only as voipd starts.
    var recordedKeepAlive: RecordedKeepAlive?

    /// The app's name, as apps and controllers give it.
    var name: String { id.name }

    init(name: String, state: State, lifecycle: AppLifecycle) {
        self.id = AppID(name)
        self.state = state
        self.lifecycle = lifecycle
    }

    convenience init(name: String, uid: uid_t, lifecycle: AppLifecycle, since: Double) {
        self.init(name: name, state: State(uid: uid, since: since), lifecycle: lifecycle)
    }

    subscript<Value>(dynamicMember field: WritableKeyPath<State, Value>) -> Value {
        get { state[keyPath: field] }
        _modify { yield &state[keyPath: field] }
    }
}

import VoipdLifecycle

/// Every app voipd knows, alive or not, with what it knows about apps it has no record of yet
/// (manifests), and the inputs waiting to be fed to their lifecycles.
final class AppTable {
    // The records and the queues of inputs, starts and bookkeeping are looked at on every
    // turn of the loop and every request: they are not checked for exclusive access at run
    // time (`@exclusivity(unchecked)`; about 80 instructions a check). Every access to them
    // in the daemon is one get, append, removal or copy that runs no code of the daemon
    // while it lasts (the lists are copied before they are worked through), so no access
    // can overlap another; the daemon's one thread owns them.
    @exclusivity(unchecked) private var records: [AppID: AppRecord] = [:]
    /// App manifests, by app.
    var manifests: [AppID: ResolvedManifest] = [:]
    /// Manifests in error, by the app their file is named after, to say why it cannot be launched.
    var invalidManifests: [AppID: ConfigurationError] = [:]
    /// Inputs raised while performing actions, fed once the current batch is done, so the
    /// state machine is never re-entered.
    @exclusivity(unchecked) var deferredInputs: [(app: AppID, input: LifecycleInput)] = []
    /// What wakes' answers left for after voipd blocked, in the order they were given.
    @exclusivity(unchecked) var wakeBookkeeping: [WakeBookkeeping] = []
    /// Launches the lifecycle asked for, done after the current batch of actions.
    @exclusivity(unchecked) var deferredStarts: [(app: AppID, inBackground: Bool, reason: String)] = []
    /// Apps whose stop the kernel has not confirmed yet: the apps in the `suspending` phase,
    /// derived from their lifecycles after each batch of actions (`Daemon.noteStopAwaited(_:)`),
    /// never kept apart from them.
    var stopsAwaited: Set<AppID> = []
    /// Those of ``stopsAwaited`` whose stop the kernel reports (SIGCHLD): voipd's children
    /// stopped with SIGSTOP. Stop reports are on while there is one.
    var reportedStopsAwaited: Set<AppID> = []

    subscript(id: AppID) -> AppRecord? {
        get { records[id] }
        set { records[id] = newValue }
    }

    var values: Dictionary<AppID, AppRecord>.Values { records.values }
    var count: Int { records.count }
}

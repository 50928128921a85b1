import VoipdSystem

/// What carries voipd's work over to the next program: the state file a restarted voipd
/// reads, and what an in-place upgrade needs (how voipd was started, and the upgrade asked for).
final class Persistence {
    /// How voipd was started, to start it the same way on an in-place upgrade.
    let arguments: [String]
    /// The resource limits voipd was started with, which its apps start with.
    var appResourceLimits: [ResourceLimit]
    /// Where this voipd writes down its apps for the next one (nil: nowhere).
    var stateFile: StateFile?
    /// This boot's id: a state file written before the last boot names no process.
    let bootID = ProcFS.bootID ?? ""
    /// An in-place upgrade to perform between two turns of the loop (SIGUSR2, or the client
    /// and request that asked).
    var pendingUpgrade: PendingReply?
    var upgradeBySignal = false

    init(arguments: [String], appResourceLimits: [ResourceLimit]) {
        self.arguments = arguments
        self.appResourceLimits = appResourceLimits
    }
}

import VoipdSystem

/// What carries voipd's work over to the next program: the state file a restarted voipd
/// reads, and what an in-place upgrade needs (how voipd was started, and the upgrade asked for).
///
/// An in-place upgrade carries its ``State`` over as it is (Codable); a field added to `State`
/// survives an upgrade by itself.
@dynamicMemberLookup
final class Persistence {
    /// What goes from program to program, read and written as its fields
    /// (`persistence.appResourceLimits`).
    struct State: Codable, Equatable {
        /// The resource limits the first program was started with, which its apps start with.
        var appResourceLimits: [ResourceLimit]
    }

    /// How voipd was started, to start it the same way on an in-place upgrade.
    let arguments: [String]
    var state: State
    /// Where this voipd writes down its apps for the next one (nil: nowhere).
    var stateFile: StateFile?
    /// This boot's id: a state file written before the last boot names no process.
    let bootID = ProcFS.bootID ?? ""
    /// An in-place upgrade to perform between two turns of the loop (SIGUSR2, or the client
    /// and request that asked). Looked at after every turn of the loop, and only ever read
    /// or assigned whole: not checked for exclusive access at run time (`@exclusivity(unchecked)`).
    @exclusivity(unchecked) var pendingUpgrade: PendingReply?
    @exclusivity(unchecked) var upgradeBySignal = false
    /// At start: apps whose process an earlier voipd left stopped or frozen, until voipd
    /// decides, once every held socket is back, to keep each so or resume it
    /// (``Daemon/keepOrResumeStoppedSurvivors(recorded:)``).
    var stoppedSurvivors: [AppID] = []
    /// At start: the held sockets the service manager's store gave back that voipd could not
    /// hold again (its epoll set refused them), by app. A survivor kept stopped without one
    /// would sleep through what arrives on it: it is resumed, to register it again.
    var socketsNotTakenBack: [AppID: [String]] = [:]

    init(arguments: [String], state: State) {
        self.arguments = arguments
        self.state = state
    }

    subscript<Value>(dynamicMember field: WritableKeyPath<State, Value>) -> Value {
        get { state[keyPath: field] }
        _modify { yield &state[keyPath: field] }
    }
}

import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// The control socket and every connection on it: who is connected, who follows the event
/// stream, what their queues cost, and whether more may connect.
///
/// An in-place upgrade carries its ``State`` over as it is (Codable), with the listener and
/// each connection; a field added to `State` survives an upgrade by itself.
@dynamicMemberLookup
final class ClientTable {
    /// What the table knows beside its connections, read and written as its fields
    /// (`clients.nextClientID`).
    struct State: Codable, Equatable {
        /// Whether voipd bound the control socket itself (and so removes it when it stops); a
        /// socket the service manager passed is the service manager's.
        var boundControlSocket: Bool
        var nextClientID: UInt64 = 1
        /// Clients following the event stream (`events --follow`); closed ones are dropped on
        /// the next broadcast.
        var followers: Set<UInt64> = []
    }

    /// The listening control socket.
    let listener: FileDescriptor
    var state: State
    let admission = ConnectionAdmission()
    let queues = ClientQueues()
    // Looked at on every request and turn of the loop, and not checked for exclusive access
    // at run time (`@exclusivity(unchecked)`; about 80 instructions a check): every access
    // is one look-up, insertion, removal or copy that runs no code of the daemon while it
    // lasts (a connection dropped closes its descriptor), so none can overlap another.
    @exclusivity(unchecked) private var connections: [UInt64: ClientConnection] = [:]
    /// Transitions to send to event-stream followers once the current turn is done: a
    /// follower woken in the middle of a wake would run before the woken app.
    @exclusivity(unchecked) var pendingBroadcasts: [TransitionRecord] = []

    init(listener: consuming FileDescriptor, boundControlSocket: Bool) {
        self.listener = listener
        state = State(boundControlSocket: boundControlSocket)
    }

    subscript<Value>(dynamicMember field: WritableKeyPath<State, Value>) -> Value {
        get { state[keyPath: field] }
        _modify { yield &state[keyPath: field] }
    }

    subscript(id: UInt64) -> ClientConnection? {
        get { connections[id] }
        set { connections[id] = newValue }
    }

    @discardableResult
    func removeValue(forKey id: UInt64) -> ClientConnection? { connections.removeValue(forKey: id) }

    var values: Dictionary<UInt64, ClientConnection>.Values { connections.values }
    var count: Int { connections.count }
}

import Glibc
import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// How a held socket came to voipd. The registry treats them all alike.
enum HeldSocketOrigin: String, Codable {
    /// The app passed it with SCM_RIGHTS (`registerSocket`).
    case registered
    /// Taken over from an earlier voipd (systemd's fd store or an in-place upgrade).
    case inherited
    /// A copy voipd took itself of an adopted program's socket (`pidfd_getfd`).
    case adopted
}

/// A VoIP socket voipd holds for an app: never reclaimed, kept until the app unregisters it.
/// It stays in the epoll set, edge-triggered, for as long as it is held: the kernel reports
/// each arrival once, and `armed` says whether an arrival should wake the app.
///
/// An in-place upgrade carries its ``State`` over with its kind and descriptor, in a binary
/// record of its own (``HeldSocketTable``): a field added to `State` or beside it must be
/// added there too (SnapshotRoundTripTests fails until it is).
@dynamicMemberLookup
final class HeldSocket {
    /// What voipd knows of the socket, read and written as its fields (`held.armed`).
    struct State: Codable, Equatable {
        let id: UInt64
        let app: AppID
        let name: String
        let kind: String
        let origin: HeldSocketOrigin
        let registeredAt: Double
        /// The app is suspended (or dead and relaunchable): an arrival wakes it.
        var armed = false
        /// Something arrived since the app was last told about this socket, possibly while it
        /// ran and before it went back to sleep. Checked when arming, so that no wake is lost.
        var arrivedSinceReport = false
        /// The kernel reported a hang-up.
        var peerClosed = false
        /// The app has been told of the hang-up.
        var peerClosedReported = false
        /// How far the socket's receiving had got when the app was last told anything: what
        /// arrives after it wakes the app after its next stop, even if the app reads it first.
        /// What waited then and the app was never told of counts as arriving after it.
        var mark: ReceiveMark
        /// The mark when the app was last told of this socket: everything up to it, read or
        /// left waiting, the app knows of. Nil until it is told (and from an older voipd).
        var reportedMark: ReceiveMark?
    }

    var state: State
    let descriptor: FileDescriptor
    var token: UInt64 = 0
    /// What the socket is, read from the kernel when voipd took it (nil if it could not
    /// be); it tells the marks which calls have an answer.
    let socketKind: SocketKind?
    /// What the socket is for (a UDP socket may be connected or disconnected later; it is
    /// held alike). A listener is ready when a connection waits to be accepted, which voipd
    /// never does. A socket whose kind could not be read was readable when it was taken: it
    /// is held as a data socket, whose readiness is its bytes.
    var role: NetworkSocket.Role { socketKind?.role ?? .connected }

    /// `socketKind`: as the caller read it, or nil to read it here.
    init(id: UInt64, app: AppID, name: String, descriptor: consuming FileDescriptor, kind: String, socketKind: SocketKind? = nil,
         origin: HeldSocketOrigin, registeredAt: Double) {
        let socketKind = socketKind ?? Self.kind(of: descriptor)
        var waiting: Int?
        state = State(id: id, app: app, name: name, kind: kind, origin: origin, registeredAt: registeredAt,
                      mark: ReceiveMark.take(of: descriptor, kind: socketKind, takenOnly: true, waiting: &waiting))
        self.socketKind = socketKind
        self.descriptor = descriptor
        // The mark asked what waits (a TCP socket's does): when nothing did, the reply's
        // `bytesAvailable` needs no second `FIONREAD`. It joins the epoll set next
        // (``Daemon/hold``), edge-triggered: the kernel reports anything that arrived since,
        // as every later arrival (``noteArrival()``).
        emptyWhenLastAsked = waiting == 0
    }

    /// A socket carried over by an in-place upgrade, with what the old program knew of it.
    init(state: State, socketKind: SocketKind?, descriptor: consuming FileDescriptor) {
        self.state = state
        self.socketKind = socketKind
        self.descriptor = descriptor
    }

    /// The socket's inode (`fstat`), read when first asked for and kept: what the state
    /// file names the socket by (``RecoveryState/Socket``). Nil if it cannot be read.
    var inode: UInt64? {
        if let knownInode { return knownInode }
        do {
            knownInode = try Socket.inode(of: descriptor)
        } catch {
            // Asked again next time: the state file then says the app's sockets are unknown.
            return nil
        }
        return knownInode
    }

    private var knownInode: UInt64?

    private static func kind(of descriptor: borrowing FileDescriptor) -> SocketKind? {
        do {
            return try Socket.kind(of: descriptor)
        } catch {
            return nil
        }
    }

    subscript<Value>(dynamicMember field: KeyPath<State, Value>) -> Value { state[keyPath: field] }

    subscript<Value>(dynamicMember field: WritableKeyPath<State, Value>) -> Value {
        get { state[keyPath: field] }
        _modify { yield &state[keyPath: field] }
    }

    /// What the app should be told if it were woken for this socket now, or nil if there is
    /// nothing new for it: a hang-up it was not told of, data that arrived since it was last
    /// told of this socket and is still unread, or anything that arrived since it was last
    /// told anything (``mark``), even if it has read it since: it may have been stopped
    /// half-way through handling it. A spurious wake costs little; a missed one is a missed call.
    func pendingReadiness() -> SocketReadiness? {
        let bytes = bytesAvailable
        let connections = connectionsWaiting
        let newHangup = state.peerClosed && !state.peerClosedReported
        let waiting = (connections ?? bytes) > 0
        guard newHangup || (state.arrivedSinceReport && waiting) || state.mark.hasArrivedSince(on: descriptor) else { return nil }
        return SocketReadiness(name: state.name, bytesAvailable: bytes, peerClosed: state.peerClosed, connectionsWaiting: connections)
    }

    /// Nothing waited when voipd last asked, and the kernel has reported no arrival since
    /// (``noteArrival()``): nothing waits now either, since only an arrival adds bytes and
    /// every arrival is reported.
    private var emptyWhenLastAsked = false

    /// Bytes waiting to be read (`FIONREAD`); 0 for a listener, or a socket that cannot tell.
    var bytesAvailable: Int {
        guard role != .listening else { return 0 }
        let bytes = (try? Socket.bytesAvailable(descriptor)) ?? 0
        emptyWhenLastAsked = bytes == 0
        return bytes
    }

    /// ``bytesAvailable`` for a listing: an idle socket known to be empty is not asked
    /// again (the `ioctl` is most of what listing a socket costs: 19,000 of them take
    /// 18 ms). The wake path always asks the kernel.
    var listedBytesAvailable: Int { emptyWhenLastAsked ? 0 : bytesAvailable }

    /// The kernel reported something on the socket: what waits must be asked for again.
    func noteArrival() {
        emptyWhenLastAsked = false
    }

    /// For a listener, the connections waiting to be accepted (0 if it cannot tell); nil for
    /// any other socket.
    var connectionsWaiting: Int? {
        guard role == .listening else { return nil }
        return (try? Socket.connectionsWaiting(descriptor)) ?? 0
    }

    /// Whether anything waits: bytes or a datagram to read, a connection to accept.
    var hasWaiting: Bool { (connectionsWaiting ?? bytesAvailable) > 0 }

    /// The app is being told: what it knows now is no longer new.
    func markReported(_ readiness: SocketReadiness) {
        state.arrivedSinceReport = false
        if readiness.peerClosed { state.peerClosedReported = true }
        state.mark = ReceiveMark.take(of: descriptor, kind: socketKind)
        state.reportedMark = state.mark
    }

    /// The app is being told something (maybe of another socket): what it has taken from
    /// this one, and what it was told of it, is known to it; what else waits is not.
    func markTold() {
        state.mark = ReceiveMark.take(of: descriptor, kind: socketKind, takenOnly: true).including(state.reportedMark)
    }
}

/// Every held VoIP socket, by id and by app and name. Independent of how a socket arrived
/// and of the app's process: sockets outlive crashes and relaunches.
///
/// An app's sockets are found by one look-up of the app and one of the name: every
/// registration, retrieval and release asks for them by name and counts them, and each look-up
/// hashes a String (an app's sockets were a dictionary of names to ids inside a dictionary
/// of apps, the socket then looked up again by id). An app's entry stays, with its room,
/// when its last socket goes (an app that registers again does not grow it from nothing
/// again); ``forget(app:)`` drops it with the app's record.
final class HeldSocketRegistry {
    // Not checked for exclusive access at run time (`@exclusivity(unchecked)`; each check
    // cost about 80 instructions, several times per request): these are private, and every
    // access to them below is one look-up, insertion or removal that runs nothing of this
    // file while it lasts (the keys hash in the standard library; a socket dropped closes
    // its descriptor), so no access can overlap another. The daemon's one thread owns them.
    @exclusivity(unchecked) private var byID: [UInt64: HeldSocket] = [:]
    @exclusivity(unchecked) private var byApp: [AppID: AppSockets] = [:]
    /// Every socket by app and name, as listings give them: made again only after a change,
    /// from the apps' own lists (only a changed app's is sorted again).
    @exclusivity(unchecked) private var ordered: [HeldSocket]?
    @exclusivity(unchecked) private var nextID: UInt64 = 1

    /// One app's sockets (unchecked as the registry's own tables, and for the same reason).
    private final class AppSockets {
        @exclusivity(unchecked) var byName: [String: HeldSocket] = [:]
        /// By name, kept sorted: asked for on every arm and disarm.
        @exclusivity(unchecked) var sorted: [HeldSocket]?
    }

    var count: Int { byID.count }

    /// Ids below `id` are taken (sockets carried over by an upgrade keep theirs).
    func reserve(below id: UInt64) { nextID = max(nextID, id) }

    func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    private func entry(of app: AppID) -> AppSockets {
        if let sockets = byApp[app] { return sockets }
        let sockets = AppSockets()
        byApp[app] = sockets
        return sockets
    }

    func insert(_ socket: HeldSocket) {
        byID[socket.id] = socket
        let sockets = entry(of: socket.app)
        sockets.byName[socket.name] = socket
        sockets.sorted = nil
        ordered = nil
    }

    /// Sockets in the order ``all`` lists them (an in-place upgrade's): into an empty
    /// registry, that order is kept as it is rather than sorted again, once checked.
    func insert(listed sockets: [HeldSocket]) {
        let wasEmpty = byID.isEmpty
        byID.reserveCapacity(byID.count + sockets.count)
        for socket in sockets { insert(socket) }
        guard wasEmpty, byID.count == sockets.count,
              zip(sockets, sockets.dropFirst()).allSatisfy({ ($0.app, $0.name) < ($1.app, $1.name) }) else { return }
        var start = sockets.startIndex
        while start < sockets.endIndex {
            let app = sockets[start].app
            var end = start + 1
            while end < sockets.endIndex && sockets[end].app == app { end += 1 }
            byApp[app]?.sorted = Array(sockets[start..<end])
            start = end
        }
        ordered = sockets
    }

    @discardableResult
    func remove(app: AppID, name: String) -> HeldSocket? {
        guard let sockets = byApp[app], let socket = sockets.byName.removeValue(forKey: name) else { return nil }
        byID[socket.id] = nil
        sockets.sorted = nil
        ordered = nil
        return socket
    }

    /// Drops what is kept for an app that holds no socket any more (its record is gone).
    func forget(app: AppID) {
        if byApp[app]?.byName.isEmpty == true { byApp[app] = nil }
    }

    func socket(id: UInt64) -> HeldSocket? { byID[id] }

    func socket(app: AppID, name: String) -> HeldSocket? { byApp[app]?.byName[name] }

    /// An app's sockets, by name.
    func sockets(of app: AppID) -> [HeldSocket] {
        guard let sockets = byApp[app] else { return [] }
        if let sorted = sockets.sorted { return sorted }
        let sorted = sockets.byName.values.sorted { $0.name < $1.name }
        sockets.sorted = sorted
        return sorted
    }

    func count(of app: AppID) -> Int { byApp[app]?.byName.count ?? 0 }

    /// Every socket, by app and name.
    var all: [HeldSocket] {
        if let ordered { return ordered }
        var list: [HeldSocket] = []
        list.reserveCapacity(byID.count)
        for app in byApp.keys.sorted() { list += sockets(of: app) }
        ordered = list
        return list
    }
}

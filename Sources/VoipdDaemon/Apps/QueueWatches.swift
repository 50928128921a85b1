import VoipdSystem

/// One ordinary socket of a suspended app that voipd watches: its duplicate, registered in
/// the loop edge-triggered, so each arrival of data is seen once.
final class WatchedQueue {
    let id: UInt64
    let app: AppID
    /// The app's descriptor number, for the log.
    let target: CInt
    let descriptor: FileDescriptor
    let kind: SocketKind
    let inode: UInt64
    var token: UInt64 = 0

    init(id: UInt64, app: AppID, target: CInt, descriptor: consuming FileDescriptor, kind: SocketKind, inode: UInt64) {
        self.id = id
        self.app = app
        self.target = target
        self.descriptor = descriptor
        self.kind = kind
        self.inode = inode
    }
}

/// The ordinary sockets of suspended apps whose receive queues voipd watches (seed 004's
/// second fate of a socket: its queue fills up, and it is killed), by id.
final class QueueWatches {
    private(set) var byID: [UInt64: WatchedQueue] = [:]
    private var nextID: UInt64 = 1

    func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// At most this many sockets of one app are watched: each costs voipd a descriptor.
    static let perApp = 64

    func insert(_ watched: WatchedQueue) { byID[watched.id] = watched }

    func remove(_ watched: WatchedQueue) { byID[watched.id] = nil }

    func watched(of app: AppID) -> [WatchedQueue] { byID.values.filter { $0.app == app } }
}

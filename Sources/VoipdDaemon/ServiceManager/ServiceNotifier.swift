import Glibc
import VoipdSystem
import VoipdVocabulary

/// The sd_notify protocol: readiness, status, the watchdog and the file descriptor store.
/// Works with systemd, or anything listening on `$NOTIFY_SOCKET`.
final class ServiceNotifier {
    let path: String?
    let log: Logger
    /// Half the watchdog timeout the service manager expects pings within (nil: none).
    let watchdogInterval: Duration?
    /// One datagram socket, connected once, for every message.
    private(set) var connection: DescriptorBox?
    /// A failure is logged once, until a message goes through again.
    private var failing = false
    /// After a failed connection, no new one before this: a service manager that is gone
    /// stays gone, and each message (two per registered socket) would cost a socket, a
    /// refused `connect` and a `close` to be lost all the same.
    private var reconnectAfter: MonotonicInstant?
    static let reconnectInterval: Duration = .seconds(1)
    /// Messages the service manager's full queue (EAGAIN) held back, oldest first, each with
    /// its own copies of the descriptors it passes; sent in order once the socket is
    /// writable (``flush()``). Nothing is lost to a busy service manager: a READY=1 dropped
    /// there left a `Type=notify` start waiting until its timeout.
    private var backlog: [(fields: [String], descriptors: [DescriptorBox])] = []
    /// The most messages held back: a service manager that never reads must not cost voipd
    /// unbounded memory or descriptors. Beyond it the oldest status line or watchdog ping
    /// goes first, then the oldest message of any kind (logged).
    static let backlogLimit = 256
    /// Messages dropped from a full backlog since it was last empty (the first drop is logged).
    private var dropped = 0
    /// The event loop's registration of the socket while the backlog waits (the socket kept
    /// open until it is removed from the loop, even if ``connection`` is dropped meanwhile).
    var watch: (token: UInt64, socket: DescriptorBox)?

    init(environment: [String: String], log: Logger) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        self.log = log
        let forUs = environment["WATCHDOG_PID"].flatMap(pid_t.init).map { $0 == getpid() } ?? true
        if path != nil, forUs, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0 {
            watchdogInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    var isEnabled: Bool { path != nil }

    /// Whether messages wait for the service manager's queue to have room: then the event
    /// loop watches ``connection`` for writability and calls ``flush()``.
    var isBacklogged: Bool { !backlog.isEmpty }

    /// Sends `KEY=VALUE` lines, with descriptors (borrowed) for FDSTORE=1. Never blocks: a
    /// service manager that does not read must not stop voipd. What its full queue refuses
    /// waits in the backlog, in order, behind anything already waiting there (and is lost
    /// only if voipd exits first, or past ``backlogLimit``). The lines are made only when
    /// they go somewhere: every registration and release stores or removes its socket here,
    /// and without a service manager that listens, making them was a tenth of a request.
    func notify(_ makeFields: @autoclosure () -> [String], descriptors: [CInt] = []) {
        guard let path else { return }
        if !backlog.isEmpty {
            // Order is kept: this one goes only after every message held back before it.
            flush()
            if !backlog.isEmpty { return holdBack(makeFields(), descriptors: descriptors) }
        }
        if connection == nil, let reconnectAfter, MonotonicInstant.now < reconnectAfter { return }
        let fields = makeFields()
        do {
            let socket = try connection ?? DescriptorBox(connectDatagram(to: path))
            connection = socket
            reconnectAfter = nil
            switch try Socket.send(socket.descriptor, bytes: Array(fields.joined(separator: "\n").utf8), descriptors: descriptors) {
            case .processed:
                failing = false
            case .wouldBlock:
                holdBack(fields, descriptors: descriptors)
            }
        } catch {
            // A new connection later; the message is lost (the service manager is gone).
            connection = nil
            reconnectAfter = MonotonicInstant.now + Self.reconnectInterval
            if !failing { log.warning("sd_notify(\(fields.first ?? "")) to \(path): \(error) (further failures not logged)") }
            failing = true
        }
    }

    /// Sends what the backlog holds, oldest first, until the queue is full again.
    func flush() {
        guard let path, let socket = connection else { return backlog.removeAll() }
        while let message = backlog.first {
            do {
                let outcome = try Socket.send(socket.descriptor, bytes: Array(message.fields.joined(separator: "\n").utf8),
                                              descriptors: message.descriptors.map(\.rawValue))
                guard case .processed = outcome else { return }
                backlog.removeFirst()
            } catch {
                // The service manager is gone: nothing waiting can reach it any more.
                log.warning("sd_notify(\(message.fields.first ?? "")) to \(path): \(error); \(backlog.count) held-back messages dropped")
                backlog.removeAll()
                connection = nil
                failing = true
                return
            }
        }
        if failing {
            let lost = dropped == 0 ? "every held-back message sent" : "the held-back messages sent, but for \(dropped) dropped meanwhile"
            log.notice("sd_notify to \(path): the service manager reads again; \(lost)")
        }
        failing = false
        dropped = 0
    }

    private func holdBack(_ fields: [String], descriptors: [CInt]) {
        let copies: [DescriptorBox]
        do {
            copies = try descriptors.map { number throws(Errno) in DescriptorBox(try FileDescriptor(duplicating: number)) }
        } catch {
            return log.warning("sd_notify(\(fields.first ?? "")): the service manager's queue is full and its descriptor cannot be kept (\(error)): message dropped")
        }
        if fields.contains("FDSTOREREMOVE=1"), let name = fields.first(where: { $0.hasPrefix("FDNAME=") }) {
            // A socket stored and released while the service manager did not read: the
            // store never needs it, and the copy held back for it would keep its
            // connection open. The removal still goes, for a copy stored before.
            backlog.removeAll { $0.fields.contains("FDSTORE=1") && $0.fields.contains(name) }
        }
        if backlog.count >= Self.backlogLimit {
            let superseded = backlog.firstIndex { $0.fields.first.map(Self.isSuperseded) ?? true } ?? 0
            let message = backlog.remove(at: superseded)
            if dropped == 0 {
                log.warning("sd_notify: \(Self.backlogLimit) messages wait for the service manager; dropping the oldest, first \(message.fields.first ?? "") (further drops not logged)")
            }
            dropped += 1
        }
        if backlog.isEmpty, let path {
            log.warning("sd_notify(\(fields.first ?? "")) to \(path): its queue is full; held back until it has room")
        }
        failing = true
        backlog.append((fields, copies))
    }

    /// A status line or a watchdog ping: a later one says as much.
    private static func isSuperseded(_ first: String) -> Bool { first.hasPrefix("STATUS=") || first == "WATCHDOG=1" }

    /// The service manager keeps a copy of the socket under "APP/NAME", and gives it back
    /// on the next start: a restart of voipd loses no VoIP connection.
    func store(_ held: HeldSocket) {
        notify(["FDSTORE=1", "FDNAME=\(held.app)/\(held.name)"], descriptors: [held.descriptor.rawValue])
    }

    func removeFromStore(app: String, name: String) {
        notify(["FDSTOREREMOVE=1", "FDNAME=\(app)/\(name)"])
    }

    /// Stores a descriptor under a name, replacing what was stored under it (the store keeps
    /// every descriptor given, even under the same name).
    func replaceInStore(app: String, name: String, descriptor: borrowing FileDescriptor) {
        guard isEnabled else { return }
        removeFromStore(app: app, name: name)
        notify(["FDSTORE=1", "FDNAME=\(app)/\(name)"], descriptors: [descriptor.rawValue])
    }
}

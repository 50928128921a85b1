import Glibc
import VoipdSystem

/// Descriptors a service manager passed at start (`$LISTEN_FDS`, `$LISTEN_FDNAMES`): the
/// control socket (socket activation) and VoIP sockets from the file descriptor store. Every
/// one is owned here until taken: those nobody takes are closed with it.
final class ActivatedDescriptors {
    /// What one passed descriptor is, by the name it was passed under.
    enum Entry: Equatable {
        /// "control", or the only socket passed without a store name.
        case controlSocket
        /// "APP/SOCKET": a held VoIP socket.
        case heldSocket(app: String, name: String)
        /// "APP/#record": an app's record (a memfd of JSON: owner, how to start it).
        case record(app: String)
        /// "APP/#process": an app's process (a pidfd).
        case process(app: String)
        /// Anything else: not a name voipd gave.
        case unknown(name: String)
    }

    /// The descriptors, in the order passed (3, 4, …).
    private let passed: DescriptorBag
    /// What each is, in the same order.
    let entries: [Entry]

    init() {
        passed = DescriptorBag()
        entries = []
    }

    /// Takes the descriptors from the environment, if `$LISTEN_PID` is this process; they
    /// start at 3. Each is made close-on-exec: the service manager passes them without.
    init(environment: [String: String]) {
        guard let pid = environment["LISTEN_PID"].flatMap(pid_t.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count > 0 else {
            passed = DescriptorBag()
            entries = []
            return
        }
        let names = (environment["LISTEN_FDNAMES"] ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let bag = DescriptorBag()
        var entries: [Entry] = []
        for index in 0..<count {
            guard let descriptor = FileDescriptor(inherited: CInt(3 + index)) else { continue }
            let isSocket = (try? Socket.kind(of: descriptor)) != nil
            entries.append(Self.entry(named: index < names.count ? names[index] : "unknown", passedAlone: count == 1) { isSocket })
            bag.append(descriptor)
        }
        passed = bag
        self.entries = entries
    }

    /// What a descriptor passed under `name` is. A lone socket without a store name is the
    /// control socket, whatever its type (which the daemon then checks).
    static func entry(named name: String, passedAlone: Bool, isSocket: () -> Bool) -> Entry {
        let parts = name.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        if name == "control" || (passedAlone && parts.count == 1 && isSocket()) { return .controlSocket }
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return .unknown(name: name) }
        switch parts[1] {
        case StoredApp.recordName: return .record(app: parts[0])
        case StoredApp.processName: return .process(app: parts[0])
        default: return .heldSocket(app: parts[0], name: parts[1])
        }
    }

    /// Takes the descriptor of entry `index` (each is taken once).
    func take(_ index: Int) -> FileDescriptor? { passed.take(index) }

    /// Takes the control socket, if one was passed.
    func takeControlSocket() -> FileDescriptor? {
        guard let index = entries.firstIndex(of: .controlSocket) else { return nil }
        return passed.take(index)
    }
}

/// The sd_notify protocol: readiness, status, the watchdog and the file descriptor store.
/// Works with systemd, or anything listening on `$NOTIFY_SOCKET`.
final class ServiceNotifier {
    let path: String?
    let log: Logger
    /// Half the watchdog timeout the service manager expects pings within (nil: none).
    let watchdogInterval: Duration?
    /// One datagram socket, connected once, for every message.
    private var connection: DescriptorBox?
    /// A failure is logged once, until a message goes through again.
    private var failing = false

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

    /// Sends `KEY=VALUE` lines, with descriptors (borrowed) for FDSTORE=1. Never blocks: a
    /// service manager that does not read must not stop voipd.
    func notify(_ fields: [String], descriptors: [CInt] = []) {
        guard let path else { return }
        do {
            let socket = try connection ?? DescriptorBox(connectDatagram(to: path))
            connection = socket
            switch try Socket.send(socket.descriptor, bytes: Array(fields.joined(separator: "\n").utf8), descriptors: descriptors) {
            case .processed:
                failing = false
            case .wouldBlock:
                // A full queue loses this message only.
                if !failing { log.warning("sd_notify(\(fields.first ?? "")) to \(path): its queue is full (further failures not logged)") }
                failing = true
            }
        } catch {
            // A new connection next time.
            connection = nil
            if !failing { log.warning("sd_notify(\(fields.first ?? "")) to \(path): \(error) (further failures not logged)") }
            failing = true
        }
    }

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

extension Daemon {
    /// A control socket passed by the service manager must be what voipd would have bound: a
    /// listening `AF_UNIX` `SOCK_SEQPACKET` socket. A `ListenStream=` or `ListenDatagram=`
    /// unit would make every client fail (`EPROTOTYPE`) while voipd seemed to run: it is a
    /// configuration error instead (exit 78).
    static func checkActivatedControlSocket(_ fd: borrowing FileDescriptor) throws {
        let kind: SocketKind?
        do {
            kind = try Socket.kind(of: fd)
        } catch {
            throw ConfigurationError("cannot inspect the control socket passed by the service manager (descriptor \(fd.rawValue)): \(error)")
        }
        guard let kind, kind.domain == AF_UNIX, kind.type == Socket.seqpacketType, kind.isListening else {
            let what = kind.map { "a \($0.isListening ? "listening " : "")\($0.name) socket" } ?? "not a socket"
            throw ConfigurationError("the control socket passed by the service manager (descriptor \(fd.rawValue)) is \(what), not a listening unix-seqpacket socket: its socket unit must use ListenSequentialPacket=PATH (not ListenStream= or ListenDatagram=)")
        }
    }
}

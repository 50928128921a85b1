import Glibc
import VoipdSystem

/// Descriptors a service manager passed at start (`$LISTEN_FDS`, `$LISTEN_FDNAMES`): the
/// control socket (socket activation) and VoIP sockets from the file descriptor store.
struct ActivatedDescriptors {
    /// The control socket, named "control" (or the only socket passed), if it is one.
    var controlSocket: CInt?
    /// Held VoIP sockets, named "APP/SOCKET".
    var heldSockets: [(app: String, name: String, descriptor: CInt)] = []
    /// Apps' records ("APP/#record", a memfd of JSON: owner, how to start it) and processes
    /// ("APP/#process", a pidfd), stored beside their sockets.
    var records: [(app: String, descriptor: CInt)] = []
    var processes: [(app: String, descriptor: CInt)] = []
    /// Passed but not understood: closed.
    var unknown: [(name: String, descriptor: CInt)] = []

    /// Reads the environment (only when `$LISTEN_PID` is this process); descriptors start at 3.
    /// Each is made close-on-exec: the service manager passes them without.
    static func take(from environment: [String: String]) -> ActivatedDescriptors {
        var result = ActivatedDescriptors()
        guard let pid = environment["LISTEN_PID"].flatMap(pid_t.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count > 0 else { return result }
        let names = (environment["LISTEN_FDNAMES"] ?? "").split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        for index in 0..<count {
            let fd = CInt(3 + index)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let name = index < names.count ? names[index] : "unknown"
            let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
            // A lone socket without a store name is the control socket, whatever its type
            // (which the daemon then checks).
            if name == "control" || (count == 1 && !name.contains("/") && ((try? Socket.kind(of: fd)) ?? nil) != nil) {
                result.controlSocket = fd
            } else if parts.count == 2 && parts[1] == StoredApp.recordName {
                result.records.append((parts[0], fd))
            } else if parts.count == 2 && parts[1] == StoredApp.processName {
                result.processes.append((parts[0], fd))
            } else if parts.count == 2 {
                result.heldSockets.append((parts[0], parts[1], fd))
            } else {
                result.unknown.append((name, fd))
            }
        }
        return result
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

    /// Sends `KEY=VALUE` lines, with descriptors for FDSTORE=1. Never blocks: a service
    /// manager that does not read must not stop voipd.
    func notify(_ fields: [String], descriptors: [CInt] = []) {
        guard let path else { return }
        do {
            let socket = try connection ?? DescriptorBox(connectDatagram(to: path))
            connection = socket
            try Socket.send(socket.rawValue, bytes: Array(fields.joined(separator: "\n").utf8), descriptors: descriptors)
            failing = false
        } catch {
            // A full queue loses this message only; anything else means a new connection next time.
            if (error as? Errno)?.rawValue != EAGAIN { connection = nil }
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
    func replaceInStore(app: String, name: String, descriptor: CInt) {
        guard isEnabled else { return }
        removeFromStore(app: app, name: name)
        notify(["FDSTORE=1", "FDNAME=\(app)/\(name)"], descriptors: [descriptor])
    }
}

extension Daemon {
    /// A control socket passed by the service manager must be what voipd would have bound: a
    /// listening `AF_UNIX` `SOCK_SEQPACKET` socket. A `ListenStream=` or `ListenDatagram=`
    /// unit would make every client fail (`EPROTOTYPE`) while voipd seemed to run: it is a
    /// configuration error instead (exit 78).
    static func checkActivatedControlSocket(_ fd: CInt) throws {
        let kind: SocketKind?
        do {
            kind = try Socket.kind(of: fd)
        } catch {
            throw ConfigurationError("cannot inspect the control socket passed by the service manager (descriptor \(fd)): \(error)")
        }
        guard let kind, kind.domain == AF_UNIX, kind.type == Socket.seqpacketType, kind.isListening else {
            let what = kind.map { "a \($0.isListening ? "listening " : "")\($0.name) socket" } ?? "not a socket"
            throw ConfigurationError("the control socket passed by the service manager (descriptor \(fd)) is \(what), not a listening unix-seqpacket socket: its socket unit must use ListenSequentialPacket=PATH (not ListenStream= or ListenDatagram=)")
        }
    }
}

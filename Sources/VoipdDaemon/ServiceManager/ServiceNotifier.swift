import Glibc
import VoipdSystem

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

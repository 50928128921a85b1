import Glibc
import VoipdSystem

/// The sd_notify protocol: tells the service manager (systemd, or anything listening on
/// `$NOTIFY_SOCKET`) that voipd is ready, how it is doing, and that it is stopping.
struct ServiceNotifier {
    let path: String?
    let log: Logger

    init(environment: [String: String], log: Logger) {
        path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        self.log = log
    }

    var isEnabled: Bool { path != nil }

    /// Sends `KEY=VALUE` lines, with descriptors for FDSTORE=1.
    func notify(_ fields: [String], descriptors: [CInt] = []) {
        guard let path else { return }
        do {
            try sendDatagram(to: path, bytes: Array(fields.joined(separator: "\n").utf8), descriptors: descriptors)
        } catch {
            log.warning("sd_notify(\(fields.first ?? "")) to \(path): \(error)")
        }
    }
}

import Glibc
import VoipdLifecycle
import VoipdSystem

extension Daemon {
    /// Leaves nothing stopped: every suspended app is resumed (it stays in the background
    /// and reconnects to the next voipd), then the control socket is removed.
    func shutDown() {
        notifier.notify(["STOPPING=1", "STATUS=stopping: resuming suspended apps"])
        endPageOutsBeforeShutdown()
        for app in apps.values.sorted(by: { $0.name < $1.name }) { feed(app, .shutdown) }
        for client in Array(clients.values) { closeClient(client) }
        // Agents end with their sockets; the records say where each transfer stands.
        transfers?.service.shutdown()
        if clients.boundControlSocket {
            do {
                try removeFile(configuration.socketPath)
            } catch {
                log.warning("cannot remove the control socket: \(error)")
            }
        }
        // The apps left running are written down: the next voipd supervises them again.
        saveStateIfChanged()
        suspender.freezer?.removeInstanceDirectory()
        log.notice("voipd stopped: \(apps.values.filter { $0.lifecycle.phase.isAlive }.count) apps left running, \(registry.count) held sockets closed")
    }
}

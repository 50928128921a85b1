import VoipdSystem

extension Daemon {
    /// While sd_notify messages wait for room in the service manager's queue, the loop
    /// watches the notify socket for it (and ``ServiceNotifier/flush()`` sends them); once
    /// they are gone, it stops watching. Called at the top of every turn of the loop.
    func watchNotifierBacklog() {
        if notifier.isBacklogged, notifier.watch == nil, let socket = notifier.connection {
            do {
                notifier.watch = (try loop.register(socket.descriptor, .writable, .serviceNotifier), socket)
            } catch {
                log.error("cannot watch the service manager's notify socket: \(error); held-back messages go with the next one")
            }
        } else if !notifier.isBacklogged || notifier.connection !== notifier.watch?.socket, let watch = notifier.watch {
            loop.deregister(watch.socket.descriptor, token: watch.token)
            notifier.watch = nil
        }
    }
}

import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// The held VoIP sockets: taking them in, watching them, the wake path, letting them go.
extension Daemon {
    /// Holds a socket for an app. It joins the epoll set edge-triggered and stays there
    /// until released: an arrival is reported once, whether the app is running or not.
    @discardableResult
    /// `socketKind`: what the caller read of it already (nil: read here).
    func hold(_ descriptor: consuming FileDescriptor, app: AppRecord, name: String, kind: String, socketKind: SocketKind? = nil,
              origin: HeldSocketOrigin) throws -> HeldSocket {
        let held = HeldSocket(id: registry.makeID(), app: app.id, name: name, descriptor: descriptor, kind: kind,
                              socketKind: socketKind, origin: origin, registeredAt: wallClockMicroseconds())
        do {
            held.token = try loop.register(held.descriptor, [.readable, .readHangup, .edgeTriggered], .heldSocket(held.id))
        } catch {
            throw ProtocolError(.internalError, "cannot watch \(name): \(error)")
        }
        registry.insert(held)
        noteSocketsChanged(of: app.id)
        if origin == .registered { notifier.store(held) }
        // Whatever is already waiting counts as new: the app may be about to sleep.
        held.arrivedSinceReport = true
        // The lifecycle says whether to watch it (only for an app that is not running, or
        // stopped); a running app's lifecycle only takes the count.
        let count = registry.count(of: app.id)
        if !app.lifecycle.takeHeldSocketCountQuietly(count) { feed(app, .heldSocketsChanged(count)) }
        return held
    }

    /// Lets a socket go: out of the epoll set and closed.
    func release(_ held: HeldSocket) {
        registry.remove(app: held.app, name: held.name)
        noteSocketsChanged(of: held.app)
        notifier.removeFromStore(app: held.app.name, name: held.name)
        loop.deregister(held.descriptor, token: held.token)
        guard let app = apps[held.app] else { return }
        let count = registry.count(of: app.id)
        // Taken at once only with no input queued before it, so the order inputs see stays.
        if apps.deferredInputs.isEmpty && app.lifecycle.takeHeldSocketCountQuietly(count) { return }
        feedLater(app, .heldSocketsChanged(count))
    }

    /// The app is being told something: the marks its sockets' later arrivals are measured from.
    func markSockets(of app: AppRecord) {
        // What waits on a socket the app was never told of (it came while the app ran, even
        // an instant before this event, or before the socket was registered) is not covered:
        // the app may take it only after acknowledging this event, and be stopped handling it.
        for held in registry.sockets(of: app.id) { held.markTold() }
    }

    /// The app is told of a socket now: what waits on it and its hang-up are known to the app.
    func markReported(_ readiness: SocketReadiness, of app: AppRecord) {
        registry.socket(app: app.id, name: readiness.name)?.markReported(readiness)
    }

    /// The app goes to sleep (or died), or its stop was confirmed: arrivals should wake it.
    /// Anything that arrived since it was last told wakes it now, whether it is still unread
    /// or the app read it between its acknowledgement and the stop: nothing is lost there.
    /// Every socket with something new is offered; the lifecycle wakes the app for the first
    /// and passes over the rest (the app then runs and reads them itself), and only the one
    /// it tells the app of is marked as told (`.markReported`): the others stay new, so that
    /// what the app does not get to before its next stop wakes it again.
    func arm(_ app: AppRecord) {
        for held in registry.sockets(of: app.id) {
            held.armed = true
            if let readiness = held.pendingReadiness() {
                feedLater(app, .socketReady(readiness))
            } else if !held.hasWaiting {
                held.arrivedSinceReport = false
            }
        }
    }

    func disarm(_ app: AppRecord) {
        for held in registry.sockets(of: app.id) { held.armed = false }
    }

    /// The wake path: data, a datagram, a connection or a hang-up on a held socket.
    func heldSocketEvent(_ held: HeldSocket, _ events: EpollEvents) {
        held.noteArrival()
        held.arrivedSinceReport = true
        if !events.intersection([.readHangup, .hangup, .error]).isEmpty { held.peerClosed = true }
        guard held.armed, let app = apps[held.app] else { return }
        guard let readiness = held.pendingReadiness() else { return }
        app.wakeSeenAt = now
        // The wake path: the lifecycle says it will resume the app, so SIGCONT goes first and
        // the app runs while voipd does the bookkeeping (its `.resume` is then done already).
        var resumedAt: Double?
        if app.lifecycle.inspect({ $0.resumesOnSocketReady }), let process = app.process {
            let continuing = wallClockSeconds()
            do {
                try suspender.resume(process)
                resumedAt = continuing
            } catch {
                // The lifecycle's `.resume` tries again, and says why it fails.
            }
        }
        feed(app, .socketReady(readiness), resumedAt: resumedAt)
    }

    func socketStatus(_ held: HeldSocket) -> HeldSocketStatus {
        HeldSocketStatus(app: held.app.name, name: held.name, kind: held.kind, role: held.role.rawValue,
                         bytesAvailable: held.listedBytesAvailable, connectionsWaiting: held.connectionsWaiting,
                         peerClosed: held.peerClosed, watching: held.armed, registeredAt: held.registeredAt)
    }
}

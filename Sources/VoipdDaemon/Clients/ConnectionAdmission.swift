import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Accepting connections without letting anyone exhaust voipd: the per-user connection
/// quota, a descriptor kept in reserve, and a pause in accepting while voipd is out of
/// descriptors (no busy loop on `accept`, no log flood), until one is freed.
final class ConnectionAdmission {
    /// The listener's registration in the epoll set (0 while accepting is paused).
    var listenerToken: UInt64 = 0
    /// Held open so that, out of descriptors, voipd can still accept one connection to tell
    /// it why (and so take it off the backlog).
    var reserve: FileDescriptor?
    var paused: Bool { listenerToken == 0 }
    /// For `voipctl stats` (counted since this program started).
    var pauses = 0
    var quotaRefusals = 0
    var helloTimeouts = 0

    init() {
        reserve = Self.openReserve()
    }

    /// A descriptor to hold in reserve; nil while voipd has none to spare.
    static func openReserve() -> FileDescriptor? {
        do {
            return try openFile("/dev/null", flags: O_RDONLY)
        } catch {
            return nil
        }
    }

    /// How long accepting stays paused when no connection closes meanwhile.
    static let pause: Duration = .seconds(1)
}

extension Daemon {
    /// voipd's soft `RLIMIT_NOFILE` raised to its hard limit (the apps get the limit voipd
    /// was started with back, see ``appResourceLimits``). Returns the limit at start.
    static func raiseDescriptorLimit() throws -> ResourceLimit {
        let atStart = try ResourceLimit.current(ResourceLimit.openFiles)
        if atStart.soft < atStart.hard {
            try ResourceLimit(resource: atStart.resource, soft: atStart.hard, hard: atStart.hard).apply()
        }
        return atStart
    }

    func acceptClients() {
        while !clients.admission.paused {
            let accepted: IOResult<FileDescriptor>
            do {
                accepted = try Socket.accept(clients.listener)
            } catch where error.isResourceExhaustion {
                return pauseAccepting(error)
            } catch {
                // EPERM (a security module), EPROTO: that connection is lost, the next may not be.
                log.warning("accept: \(error)")
                continue
            }
            guard case .processed(let fd) = consume accepted else { return }
            if Self.isAbandoned(fd) {
                log.debug("a connection closed by its peer before it was accepted: dropped")
                continue
            }
            let credentials: PeerCredentials
            do {
                credentials = try Socket.peerCredentials(fd)
            } catch {
                log.warning("dropping a connection without peer credentials: \(error)")
                continue
            }
            if let refusal = connectionQuotaRefusal(credentials.uid) {
                log.warning("refusing a connection from pid \(credentials.pid): \(refusal.message)")
                refuse(fd, refusal)
                clients.admission.quotaRefusals += 1
                continue
            }
            let client = ClientConnection(id: clients.nextClientID, descriptor: fd, credentials: credentials)
            clients.nextClientID += 1
            client.lastRequestAt = now
            do {
                client.token = try loop.register(client.descriptor, [.readable], .client(client.id))
            } catch {
                log.warning("cannot watch a new connection: \(error)")
                continue
            }
            clients[client.id] = client
            armHelloTimeout(client)
            log.debug("client \(client.id) connected: pid \(credentials.pid) uid \(credentials.uid)")
        }
    }

    /// Whether a connection just accepted was closed by its peer with nothing sent: one that
    /// waited in the backlog while voipd was out of descriptors. Closed at once, a burst of
    /// them does not take the descriptors that the live connections behind them need. A
    /// peer that sent a request before closing is served as ever.
    private static func isAbandoned(_ fd: borrowing FileDescriptor) -> Bool {
        // Closed first: nothing can arrive after that, so no byte counted below is missed.
        guard Socket.peerHasClosed(fd) else { return false }
        do {
            return try Socket.bytesAvailable(fd) == 0
        } catch {
            // Served as any connection: reading it will say what is wrong.
            return false
        }
    }

    /// Sends a connection-level error (request id 0) on a connection about to be closed.
    private func refuse(_ fd: borrowing FileDescriptor, _ error: ProtocolError) {
        do {
            // A fresh connection's buffer is empty: this fits, or the peer is gone already.
            _ = try Socket.send(fd, bytes: codec.packet(.reply, Reply<EmptyResult>(id: 0, error: error)))
        } catch {
            log.debug("a refused connection was not told why: \(error)")
        }
    }

    /// Out of descriptors: one waiting connection is told so (with the reserve descriptor),
    /// and the listener leaves the epoll set until a connection closes, or for
    /// ``ConnectionAdmission/pause``. The backlog keeps the others waiting meanwhile.
    func pauseAccepting(_ error: Errno) {
        guard !clients.admission.paused else { return }
        if let spare = clients.admission.reserve.take() {
            // Closing /dev/null cannot fail in a way worth reporting.
            _ = consume spare
            do {
                if case .processed(let fd) = try Socket.accept(clients.listener) {
                    refuse(fd, ProtocolError(.outOfResources, "voipd is out of descriptors (\(error)); try again later"))
                }
            } catch {
                log.debug("no connection could be told voipd is out of descriptors: \(error)")
            }
            clients.admission.reserve = ConnectionAdmission.openReserve()
        }
        loop.deregister(clients.listener, token: clients.admission.listenerToken)
        clients.admission.listenerToken = 0
        clients.admission.pauses += 1
        timers.set(.resumeAccepting, deadline: now + ConnectionAdmission.pause)
        log.warning("out of descriptors (\(error)): not accepting connections until one closes, or for \(ConnectionAdmission.pause.seconds) s")
    }

    /// Puts the listener back in the epoll set (level-triggered: connections that waited in
    /// the backlog are accepted in the next turn).
    func resumeAccepting() {
        guard clients.admission.paused else { return }
        timers.cancel(.resumeAccepting)
        if clients.admission.reserve == nil { clients.admission.reserve = ConnectionAdmission.openReserve() }
        do {
            clients.admission.listenerToken = try loop.register(clients.listener, .readable, .listener)
        } catch {
            // Retried later: the epoll set itself may need memory.
            timers.set(.resumeAccepting, deadline: now + ConnectionAdmission.pause)
            log.warning("cannot watch the control socket again: \(error)")
        }
    }

    // MARK: - Connections that never say hello

    /// A connection that is neither an app nor a follower of the event stream must make a
    /// request at least every `limits.helloTimeout`.
    func armHelloTimeout(_ client: ClientConnection) {
        guard let timeout = configuration.limits.helloTimeout else { return }
        timers.set(.helloTimeout(client.id), deadline: client.lastRequestAt + timeout)
    }

    func helloTimeoutFired(_ id: UInt64) {
        guard let client = clients[id], client.appName == nil, client.following == nil, let timeout = configuration.limits.helloTimeout else { return }
        // Waiting for a reply voipd gives later: a launch's (its app to connect), a
        // hibernation's (its page-out to end).
        let waiting = apps.values.contains { app in app.launchWaiters.contains { $0.client == id } } || hibernations.pageOutAwaited(by: id)
        let pending = client.bytesAvailable
        if waiting || pending > 0 || now - client.lastRequestAt < timeout {
            // Busy, or a request is waiting to be read in this turn: look again later.
            client.lastRequestAt = max(client.lastRequestAt, waiting || pending > 0 ? now : client.lastRequestAt)
            return armHelloTimeout(client)
        }
        log.info("client \(id) (pid \(client.credentials.pid), uid \(client.credentials.uid)): closed after \(timeout.seconds) s without hello or a request")
        clients.admission.helloTimeouts += 1
        closeClient(client)
    }
}

import Glibc
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// How a ``VoIPApplication`` reconnects when voipd goes away: at once, then after a delay
/// that doubles with each failed attempt up to a cap (each delay drawn between half and all
/// of it, so that many apps do not all come back in the same instant). Attempts are made
/// from the app's event loop, woken by ``VoIPApplication/fileDescriptor``: no thread, no
/// busy loop.
public struct ReconnectionPolicy: Sendable {
    /// Reconnect at all; when false, a closed connection throws ``VoipdError/disconnected``
    /// from ``VoIPApplication/nextEvent(timeoutMilliseconds:)`` (voipd's launched apps
    /// then usually exit, to be relaunched by data).
    public var isEnabled = true
    /// The delay after the first failed attempt.
    public var initialDelay: Duration = .milliseconds(100)
    /// The longest delay between two attempts.
    public var maximumDelay: Duration = .seconds(5)

    public init(isEnabled: Bool = true, initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5)) {
        self.isEnabled = isEnabled
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }
}

extension VoIPApplication {
    /// The connection closed: drop it, tell the delegate from the event loop, and try again
    /// at once (the retry timer fires at the next look).
    func connectionLost() {
        guard let lost = connection else { return }
        connection = nil
        forget(lost)
        unacknowledged.removeAll()
        retryDelay = nil
        lossToReport = true
        schedule(after: .zero)
    }

    /// Takes a connection out of ``fileDescriptor``'s set; closed when the last reference goes.
    private func forget(_ connection: VoipdConnection) {
        do {
            try readiness.remove(connection.descriptor)
        } catch {
            // Not in the set: nothing to take out.
        }
    }

    /// Arms the retry timer.
    private func schedule(after delay: Duration) {
        do {
            try retryTimer.arm(at: .now + max(delay, .zero))
        } catch {
            // timerfd_settime fails only on arguments this cannot give it; the app can see it.
            lastReconnectionError = error
        }
    }

    /// One attempt: connect, say hello, and restore what voipd must know of the app. A
    /// failure schedules the next attempt.
    func reconnect() {
        do {
            let fresh = try VoipdConnection(socketPath: socketPath)
            let (result, descriptors) = try fresh.request(.hello, { HelloRequest(id: $0, name: name) }, expecting: HelloResult.self,
                                                          timeout: .seconds(10))
            let refused = try restoreRegistrations(on: fresh, handedBack: result.sockets, descriptors)
            try restoreKeepAliveAndTasks(on: fresh)
            try retryTimer.disarm()
            try readiness.add(fresh.descriptor, events: .readable, token: Token.connection)
            connection = fresh
            status = result.app
            timeScale = result.timeScale ?? 1
            state = result.app.state
            retryDelay = nil
            lastReconnectionError = nil
            for (socket, error) in refused { delegate?.application(self, didFailToRegisterVoIPSocket: socket, error: error) }
            delegate?.applicationSupervisorDidBecomeAvailable(self)
        } catch {
            // Not back yet, refused (its old connection not yet seen closed, say), or lost
            // again halfway: the next attempt starts over.
            lastReconnectionError = error
            let delay = retryDelay.map { min($0 * 2, reconnection.maximumDelay) } ?? reconnection.initialDelay
            retryDelay = delay
            schedule(after: delay * Double.random(in: 0.5...1))
        }
    }

    /// Takes the sockets a hello handed back: a socket voipd held for this app under a name
    /// the application does not know is restored to the app (and registered from now on);
    /// under a name it knows, it is voipd's copy of the app's own socket (a service
    /// manager's store kept it across the restart) or an older socket the app has replaced.
    /// Returns the names voipd now holds the app's own socket under.
    func takeHandedBack(_ names: [String], _ descriptors: DescriptorBag) -> Set<String> {
        var held: Set<String> = []
        for (index, name) in names.enumerated() {
            guard let fd = descriptors.take(index) else { continue }
            if let mine = registrations[name] {
                if sameSocket(mine.descriptor, fd) { held.insert(name) }
                continue
            }
            do {
                registrations[name] = DescriptorBox(try fd.duplicate())
            } catch {
                // Out of descriptors: restored to the app all the same, not registered again later.
            }
            restoredDescriptors.append(fd)
            // One handed back earlier under the same name is closed: the new one replaces it.
            if let older = restored.updateValue(restoredDescriptors.count - 1, forKey: name) { _ = restoredDescriptors.take(older) }
            held.insert(name)
        }
        descriptors.closeAll()
        return held
    }

    /// Registers again every socket voipd does not hold the app's own copy of. Returns the
    /// ones voipd refused (dropped from the registrations); a lost connection throws.
    private func restoreRegistrations(on connection: VoipdConnection, handedBack names: [String],
                                      _ descriptors: DescriptorBag) throws -> [(String, VoipdError)] {
        let held = takeHandedBack(names, descriptors)
        var refused: [(String, VoipdError)] = []
        for (name, socket) in registrations.sorted(by: { $0.key < $1.key }) where !held.contains(name) {
            do {
                if names.contains(name) {
                    // voipd holds an older socket under the name: the app's is the one.
                    _ = try connection.socketRequest(.unregisterSocket, name: name)
                }
                _ = try connection.socketRequest(.registerSocket, name: name, descriptors: [socket.rawValue])
            } catch let error as VoipdError where error != .disconnected {
                registrations[name] = nil
                refused.append((name, error))
            }
        }
        return refused
    }

    /// Sets the keep-alive again, begins the open background tasks again and says again that
    /// a call is going on (a refusal leaves the keep-alive unset, the task without voipd's
    /// time, the audio session inactive).
    private func restoreKeepAliveAndTasks(on connection: VoipdConnection) throws {
        if isAudioSessionActive {
            do {
                _ = try connection.request(.setAudioSessionActive, { SetAudioSessionActiveRequest(id: $0, active: true) }, expecting: EmptyResult.self)
            } catch let error as VoipdError where error != .disconnected {
                isAudioSessionActive = false
            }
        }
        if let keepAlive {
            do {
                _ = try connection.request(.setKeepAliveTimeout, { SetKeepAliveRequest(id: $0, seconds: keepAlive.seconds, reachableFor: keepAlive.reachableFor) }, expecting: EmptyResult.self)
            } catch let error as VoipdError where error != .disconnected {
                self.keepAlive = nil
            }
        }
        for (id, task) in tasks.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            do {
                let (result, _) = try connection.request(.beginBackgroundTask, { BeginBackgroundTaskRequest(id: $0, name: task.name) },
                                                         expecting: BackgroundTaskResult.self)
                tasks[id]?.daemonID = result.task == 0 ? nil : result.task
            } catch let error as VoipdError where error != .disconnected {
                tasks[id]?.daemonID = nil
            }
        }
    }
}

/// Whether two descriptors are the same socket (the same inode).
private func sameSocket(_ first: borrowing FileDescriptor, _ second: borrowing FileDescriptor) -> Bool {
    do {
        return try Socket.inode(of: first) == Socket.inode(of: second)
    } catch {
        return false
    }
}

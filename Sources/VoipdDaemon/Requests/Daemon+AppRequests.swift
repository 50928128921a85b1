import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary
import VoipdProtocolIO

/// Requests an app makes for itself: identify, register and retrieve its VoIP sockets,
/// acknowledge events, background tasks and keep-alive.
extension Daemon {
    /// The longest keep-alive timeout accepted, in seconds: a year.
    static let longestKeepAlive: Double = 365 * 24 * 3600

    /// Names of apps and sockets: short, printable, no path separators (``NameRule``).
    static func validateName(_ name: String, what: String) throws(ProtocolError) {
        try NameRule.check(name, what: what)
    }

    /// The app a connection identified as; a request that needs one without it is refused.
    func identifiedApp(_ client: ClientConnection) throws(ProtocolError) -> AppRecord {
        guard let name = client.appName, let app = apps[name] else {
            throw ProtocolError(.notIdentified, "send hello with the app's name first")
        }
        return app
    }

    func hello(_ request: HelloRequest, from client: ClientConnection) throws {
        guard client.appName == nil else { throw ProtocolError(.alreadyIdentified, "this connection is already \(client.appName!)") }
        try Self.validateName(request.name, what: "app")
        let peer = client.credentials
        let app: AppRecord
        if let existing = apps[AppID(request.name)] {
            guard existing.unclaimed || peer.uid == 0 || peer.uid == existing.uid else {
                throw ProtocolError(.permissionDenied, "app \(request.name) belongs to uid \(existing.uid)")
            }
            if let other = existing.client.flatMap({ clients[$0] }) {
                // A reconnecting app may be faster than voipd at noticing its old connection closed.
                guard other.peerHasClosed else {
                    throw ProtocolError(.nameInUse, "app \(request.name) is already connected (pid \(other.credentials.pid))")
                }
                closeClient(other)
                drainDeferredInputs()
            }
            if let process = existing.process {
                // Launched by voipd: only that process (or one it started) may be the app.
                guard ProcFS.isDescendant(peer.pid, of: process.pid) else {
                    throw ProtocolError(.nameInUse, "app \(request.name) is running as pid \(process.pid), not \(peer.pid)")
                }
            } else {
                try adopt(client, as: existing)
            }
            app = existing
        } else {
            if let manifest = apps.manifests[AppID(request.name)] {
                // A manifest app started by someone else still runs under its manifest's rules.
                let owner = manifest.account?.uid ?? geteuid()
                guard peer.uid == 0 || peer.uid == owner else {
                    throw ProtocolError(.permissionDenied, "app \(request.name) is reserved for uid \(owner) by its manifest")
                }
                app = record(for: manifest)
            } else {
                try checkAppQuota(peer.uid)
                app = AppRecord(name: request.name, uid: peer.uid, lifecycle: newLifecycle(), since: wallClockSeconds())
                apps[app.id] = app
            }
            // The record is new: it must not outlive a failed adoption.
            do {
                try adopt(client, as: app)
            } catch {
                apps[app.id] = nil
                throw error
            }
        }
        if app.unclaimed {
            app.uid = peer.uid
            app.unclaimed = false
        }
        storeRecord(of: app)
        client.appName = app.id
        app.client = client.id
        // The held sockets go back first, in the reply; the events the lifecycle queued
        // while the app was away (a relaunch's voipSocketReadable) come after it.
        // Names and descriptors stay paired even if a duplicate cannot be made (EMFILE).
        var names: [String] = []
        let copies = DescriptorBag()
        for held in registry.sockets(of: app.id) {
            do {
                copies.append(try held.descriptor.duplicate())
                names.append(held.name)
            } catch {
                log.warning("\(app.name): cannot hand back \(held.name) now: \(error); it stays held")
            }
        }
        reply(request.id, HelloResult(app: status(of: app), sockets: names, timeScale: configuration.timeScale), to: client, passing: copies)
        log.info("\(app.name): connected (pid \(peer.pid), uid \(peer.uid)); \(names.count) held sockets handed back")
        feed(app, .connected)
        finishLaunchWaiters(app)
    }

    /// Takes the process at the other end of `client`, which voipd did not start, as the
    /// app's process, tracked by the pidfd pinned when it connected.
    private func adopt(_ client: ClientConnection, as app: AppRecord) throws {
        let pid = client.credentials.pid
        let pidfd: PidFd
        do {
            pidfd = try client.peerProcess()
        } catch {
            throw ProtocolError(systemError: error, "cannot track pid \(pid)")
        }
        let process = AppProcess(pidfd: pidfd, isChild: false)
        try watch(process, of: app)
        app.process = process
        storeProcess(of: app)
        feed(app, .launched(inBackground: false, reason: "connected (pid \(pid))"))
    }

    func registerSocket(_ request: SocketNameRequest, descriptors: DescriptorBag, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        try Self.validateName(request.name, what: "socket")
        // Owned from here: closed on every refusal below, or held.
        guard let descriptor = descriptors.take(0) else { throw ProtocolError(.badRequest, "registerSocket needs one descriptor") }
        let kind: SocketKind
        do {
            guard let found = try Socket.kind(of: descriptor) else {
                throw ProtocolError(.notASocket, "the descriptor for \(request.name) is not a socket")
            }
            kind = found
        } catch let error as Errno {
            throw ProtocolError(.notASocket, "cannot inspect the descriptor for \(request.name): \(error)")
        }
        if let refusal = VoIPSocketAdmission.refusal(of: kind, named: request.name) { throw refusal }
        guard registry.socket(app: app.id, name: request.name) == nil else {
            throw ProtocolError(.duplicateName, "\(app.name) already has a VoIP socket named \(request.name)")
        }
        // The manifest looked up once for its two answers, and read in place (a copy of it,
        // taken and dropped for each, was about 500 instructions of a registration).
        let manifest = apps.manifests.index(forKey: app.id)
        guard manifest.map({ apps.manifests.values[$0].allowsVoIP }) ?? true else {
            throw ProtocolError(.permissionDenied, "\(app.name)'s manifest has no \"voip\" background mode")
        }
        let quota = socketQuota(manifestAt: manifest)
        guard registry.count(of: app.id) < quota else {
            throw ProtocolError(.quotaExceeded, "\(app.name) already holds \(quota) VoIP sockets (the quota)")
        }
        try checkHeldSocketQuota(app.uid)
        let held = try hold(descriptor, app: app, name: request.name, kind: kind.name, socketKind: kind, origin: .registered)
        log.info("\(app.name): holding VoIP socket \(held.name) (\(held.kind)\(held.role == .connected ? "" : ", \(held.role.rawValue)"))")
        reply(request.id, SocketResult(socket: socketStatus(held)), to: client)
    }

    func unregisterSocket(_ request: SocketNameRequest, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        guard let held = registry.socket(app: app.id, name: request.name) else {
            throw ProtocolError(.noSuchSocket, "\(app.name) has no VoIP socket named \(request.name)")
        }
        let status = socketStatus(held)
        release(held)
        log.info("\(app.name): released VoIP socket \(request.name)")
        reply(request.id, SocketResult(socket: status), to: client)
    }

    func retrieveSocket(_ request: SocketNameRequest, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        guard let held = registry.socket(app: app.id, name: request.name) else {
            throw ProtocolError(.noSuchSocket, "\(app.name) has no VoIP socket named \(request.name)")
        }
        let result = SocketResult(socket: socketStatus(held))
        // Two system calls fewer (the copy's fcntl and close) when the reply goes at once.
        if sendNow(.reply, Reply(id: request.id, result: result), to: client, lending: held.descriptor) { return }
        let copy = DescriptorBag()
        copy.append(try held.descriptor.duplicate())
        reply(request.id, result, to: client, passing: copy)
    }

    func acknowledge(_ message: AcknowledgeMessage, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        if let wake = app.wakeEvent, wake.id == message.event {
            app.wakeEvent = nil
            metrics.wakeLatency.observe((now - wake.seenAt).seconds)
        }
        transferEventAcknowledged(app, eventID: message.event)
        feed(app, .acknowledged(eventID: message.event))
    }

    func beginBackgroundTask(_ request: BeginBackgroundTaskRequest, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        var task: UInt64 = 0
        if case .backgroundTaskBegan(let id) = feed(app, .beginBackgroundTask(name: request.name)).reply { task = id }
        log.info("\(app.name): background task \(request.name) \(task == 0 ? "refused: budget spent" : "began as \(task)")")
        reply(request.id, BackgroundTaskResult(task: task), to: client)
    }

    func endBackgroundTask(_ request: EndBackgroundTaskRequest, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        try replyAfter(feed(app, .endBackgroundTask(id: request.task)), request.id, to: client, result: EmptyResult())
    }

    func setKeepAlive(_ request: SetKeepAliveRequest, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        guard apps.manifests[app.id]?.allowsVoIP ?? true else {
            throw ProtocolError(.permissionDenied, "\(app.name)'s manifest has no \"voip\" background mode: no keep-alive")
        }
        // Anything longer than a year is a mistake (and would overflow the clock's arithmetic).
        for (field, seconds) in [("keep-alive timeout", request.seconds), ("reachableFor", request.reachableFor)] {
            if let seconds, !(seconds.isFinite && seconds > 0 && seconds <= Self.longestKeepAlive) {
                throw ProtocolError(.badRequest, "\(field) must be more than 0 and at most \(Int(Self.longestKeepAlive)) s, not \(seconds)")
            }
        }
        let interval = request.seconds.map { Duration.seconds($0) * configuration.timeScale }
        // Said here, in the app's seconds: the lifecycle's refusal would give the scaled ones.
        if let seconds = request.seconds, let interval, interval > .zero, interval < app.lifecycle.keepAliveMinimum {
            throw ProtocolError(.invalidState, "keep-alive timeout \(seconds) s is below the minimum of \(app.lifecycle.keepAliveMinimum.seconds / configuration.timeScale) s")
        }
        let previousWarning = keepAliveWarning(of: app)
        let outcome = feed(app, .setKeepAlive(interval))
        if case .accepted = outcome.reply {
            app.reachableFor = interval == nil ? nil : request.reachableFor.map { Duration.seconds($0) * configuration.timeScale }
            if let warning = keepAliveWarning(of: app), warning != previousWarning { log.warning("\(app.name): \(warning)") }
            // Recorded for a voipd started after this one dies while the app is suspended:
            // that voipd keeps waking it (RecordedKeepAlive).
            storeRecord(of: app)
            noteStateChange()
        }
        try replyAfter(outcome, request.id, to: client, result: EmptyResult())
    }

    /// What is wrong when the app's keep-alive cannot wake it as often as it said it needs
    /// (nil when it can, or it said nothing).
    func keepAliveWarning(of app: AppRecord) -> String? {
        guard let interval = app.lifecycle.keepAliveInterval, let reachableFor = app.reachableFor else { return nil }
        let scale = configuration.timeScale
        return KeepAliveCoverage(interval: interval.seconds / scale, minimum: app.lifecycle.keepAliveMinimum.seconds / scale,
                                 floor: configuration.timings.keepAliveFloor.seconds / scale,
                                 reachableFor: reachableFor.seconds / scale).warning
    }

    /// A call began or ended (the app's audio session). Refused to an app whose manifest
    /// says `"calls": false`.
    func setAudioSessionActive(_ request: SetAudioSessionActiveRequest, from client: ClientConnection) throws {
        let app = try identifiedApp(client)
        if request.active && !app.lifecycle.policy.allowsCalls {
            throw ProtocolError(.permissionDenied, "\(app.name)'s manifest says \"calls\": false: it is suspended in the background, call or not")
        }
        try replyAfter(feed(app, .setAudioSessionActive(request.active)), request.id, to: client, result: EmptyResult())
    }

    /// Whether the app is meant to be woken by data when suspended (its manifest may say not).
    func expectsReachable(_ app: AppRecord) -> Bool { apps.manifests[app.id]?.expectsReachable ?? true }

    /// Warns when an app is suspended with nothing that can wake it: no VoIP socket is held
    /// (it never registered one, or never connected), unless its manifest says that is meant.
    func warnIfUnreachable(_ app: AppRecord) {
        guard registry.count(of: app.id) == 0, expectsReachable(app) else { return }
        let keepAlive = app.lifecycle.keepAliveInterval == nil ? "" : " (only its keep-alive will)"
        log.warning("\(app.name): suspended with no VoIP socket: no data can wake it\(keepAlive); its manifest can say \"reachable\": false if that is meant")
    }

    /// Logs a call's start or end (the status shows it too).
    func noteCall(of app: AppRecord, startedAt: MonotonicInstant?, after input: LifecycleInput) {
        guard let startedAt else { return log.info("\(app.name): in a call (audio session active): not suspended while it lasts") }
        let lasted = ((now - startedAt).seconds / configuration.timeScale * 10).rounded() / 10
        let why = input == .timerFired(.callLimit) ? "the maximum call duration was reached" : "audio session inactive"
        log.info("\(app.name): call over after \(lasted) s (\(why)); background rules apply again")
    }

    /// Sends a lifecycle event to the app's connection.
    func deliver(_ event: AppEvent, to app: AppRecord) {
        guard let id = app.client, let client = clients[id] else { return }
        if event.kind == .voipSocketReadable || event.kind == .keepAlive { metrics.wakes += 1 }
        if event.kind == .voipSocketReadable, let seen = app.wakeSeenAt {
            app.wakeSeenAt = nil
            app.wakeEvent = (event.id, seen)
        }
        let message = EventMessage(event: event.id, kind: event.kind, socket: event.socket?.name,
                                   bytesAvailable: event.socket?.bytesAvailable, peerClosed: event.socket?.peerClosed,
                                   connectionsWaiting: event.socket?.connectionsWaiting,
                                   transfers: event.kind == .backgroundTransferEvents ? transferPayload(for: event) : nil,
                                   state: app.lifecycle.inspect { $0.state }, reason: event.reason)
        send(.event, message, to: client)
    }
}

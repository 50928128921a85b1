import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Requests from controllers (voipctl): inspect apps, move them between states, and act on
/// the whole system.
extension Daemon {
    /// The app named in a request, if the caller may act on it: root or the app's own uid.
    func authorizedApp(_ name: String, for client: ClientConnection) throws(ProtocolError) -> AppRecord {
        guard let app = apps[AppID(name)] else { throw ProtocolError(.noSuchApp, "no app named \(name)") }
        let uid = client.credentials.uid
        guard uid == 0 || uid == app.uid else {
            throw ProtocolError(.permissionDenied, "app \(name) belongs to uid \(app.uid); uid \(uid) may not act on it")
        }
        return app
    }

    func status(of app: AppRecord) -> AppStatus {
        let lifecycle = app.lifecycle
        // VmRSS and VmSwap from /proc/PID/status: no walk of the app's pages.
        let memory: MemoryCounters?
        do {
            memory = try app.process.map { try MemoryCounters.of($0.pid) }
        } catch {
            memory = nil
        }
        var status = AppStatus(
            name: app.name, pid: app.process.map { Int32($0.pid) }, state: lifecycle.state,
            voipSockets: registry.count(of: app.id), wakes: lifecycle.wakeCount, connected: app.client != nil,
            uid: app.uid, launchedByVoipd: app.launch != nil, terminationReason: lifecycle.terminationReason,
            backgroundTasks: lifecycle.openTasks.count, keepAliveSeconds: lifecycle.keepAliveInterval.map { $0.seconds / configuration.timeScale },
            launches: lifecycle.launchCount, reclaimedSockets: app.reclaimedSockets,
            residentBytes: memory?.resident, since: app.since,
            arguments: app.launch?.arguments, suspension: app.process.map(AppSuspender.backend(of:)),
            inCallSeconds: lifecycle.callStartedAt.map { (now - $0).seconds / configuration.timeScale },
            swappedBytes: memory?.swapped, hibernation: hibernationStatus(of: app),
            reachable: expectsReachable(app) ? registry.count(of: app.id) > 0 : nil)
        status.adoption = app.adoption?.status
        status.keepAliveMinimumSeconds = lifecycle.keepAliveMinimum.seconds / configuration.timeScale
        status.reachableForSeconds = lifecycle.keepAliveInterval == nil ? nil : app.reachableFor.map { $0.seconds / configuration.timeScale }
        status.keepAliveWarning = keepAliveWarning(of: app)
        return status
    }

    func status(_ request: AppQueryRequest, from client: ClientConnection) throws {
        // Someone asks how the apps are: a stopped one that someone else continued is found
        // now (two reads of /proc for each app stopped with SIGSTOP).
        if let name = request.name {
            let app = try authorizedApp(name, for: client)
            noticeUnexpectedResume(of: app, restop: true)
            return replyWhole(request.id, StatusResult(apps: [status(of: app)]), to: client)
        }
        let visible = apps.values.filter { client.credentials.uid == 0 || $0.uid == client.credentials.uid }
        for app in visible { noticeUnexpectedResume(of: app, restop: true) }
        replyWhole(request.id, StatusResult(apps: visible.sorted { $0.name < $1.name }.map(status(of:))), to: client)
    }

    /// The held sockets, by app and name, each read as its frame is written: a socket
    /// released meanwhile is left out.
    func sockets(_ request: AppQueryRequest, from client: ClientConnection) throws {
        let held = try request.name.map { registry.sockets(of: try authorizedApp($0, for: client).id) } ?? registry.all
        let uid = client.credentials.uid
        let onlyTheirs = request.name == nil && uid != 0
        var index = held.startIndex
        streamList(request.id, SocketsResult.self, to: client) { [unowned self] in
            while index < held.endIndex {
                let socket = held[index]
                index += 1
                guard registry.socket(id: socket.id) === socket else { continue }
                if onlyTheirs && apps[socket.app]?.uid != uid { continue }
                return socketStatus(socket)
            }
            return nil
        }
    }

    func appCommand(_ request: AppCommandRequest, from client: ClientConnection) throws {
        let app = try authorizedApp(request.name, for: client)
        let input: LifecycleInput
        switch request.verb {
        case .background: input = .backgroundRequested
        case .foreground: input = .foregroundRequested
        case .interrupt: input = .interruptionBegan
        case .interruptEnd: input = .interruptionEnded
        case .terminate: input = .terminateRequested
        case .kill: input = .killRequested
        case .reclaim: input = .reclaimRequested
        case .hibernate:
            log.info("\(app.name): hibernate requested by pid \(client.credentials.pid)")
            return try hibernateRequested(app, request: request.id, from: client)
        case .forget: return try forget(app, request: request.id, client: client)
        }
        log.info("\(app.name): \(request.verb.rawValue) requested by pid \(client.credentials.pid)")
        try replyAfter(feed(app, input), request.id, to: client, result: AppResult(app: status(of: app)))
    }

    /// Drops a dead app's record and every socket held for it.
    private func forget(_ app: AppRecord, request: UInt64, client: ClientConnection) throws {
        guard !app.lifecycle.phase.isAlive else {
            throw ProtocolError(.invalidState, "\(app.name) is running; terminate it first")
        }
        let final = status(of: app)
        for held in registry.sockets(of: app.id) { release(held) }
        registry.forget(app: app.id)
        for kind in LifecycleTimer.allCases { timers.cancel(.app(app.id, kind)) }
        apps[app.id] = nil
        noteStateChange()
        notifier.removeFromStore(app: app.name, name: StoredApp.recordName)
        notifier.removeFromStore(app: app.name, name: StoredApp.processName)
        log.info("\(app.name): forgotten; its held sockets are closed")
        reply(request, AppResult(app: final), to: client)
    }

    /// The lifecycle of an app voipd did not know yet: it starts with the screen as it is.
    func newLifecycle(policy: AppPolicy = AppPolicy()) -> AppLifecycle {
        AppLifecycle(timings: configuration.timings, policy: policy, screenLocked: locked)
    }

    func systemCommand(_ request: SystemCommandRequest, from client: ClientConnection) throws {
        // These act on every app: only root, or the uid voipd runs as.
        guard client.credentials.uid == 0 || client.credentials.uid == geteuid() else {
            throw ProtocolError(.permissionDenied, "\(request.verb.rawValue) acts on every app; only root or uid \(geteuid()) may ask")
        }
        let affected: [String]
        switch request.verb {
        case .lock:
            locked = true
            log.notice("screen locked by pid \(client.credentials.pid)")
            affected = apps.values.filter { $0.lifecycle.phase == .suspended }.map(\.name).sorted()
            for app in apps.values.sorted(by: { $0.name < $1.name }) { feed(app, .screenLocked) }
        case .unlock:
            locked = false
            log.notice("screen unlocked by pid \(client.credentials.pid)")
            for app in apps.values { feed(app, .screenUnlocked) }
            affected = []
        case .memoryPressure:
            affected = relieveMemoryPressure(level: request.level ?? .warning, count: max(request.count ?? 1, 0),
                                             cause: "requested by pid \(client.credentials.pid)")
        case .power, .network:
            return try transferConditions(request, from: client)
        }
        reply(request.id, SystemCommandResult(apps: affected), to: client)
    }

    func eventsRequest(_ request: EventsRequest, from client: ClientConnection) throws {
        if let name = request.name { _ = try authorizedApp(name, for: client) }
        let states = request.to.map(Set.init)
        let visible = events.records.filter { record in
            (request.name == nil || record.app == request.name) && (states?.contains(record.to) ?? true)
                && (client.credentials.uid == 0 || apps[AppID(record.app)].map { $0.uid == client.credentials.uid } ?? false)
        }
        if request.follow ?? false {
            client.following = request.name ?? ""
            client.followingStates = states
            clients.followers.insert(client.id)
        }
        replyList(request.id, EventsResult(transitions: visible), to: client)
    }

    /// Sends the transitions of the turn just done to the followers of the event stream.
    func flushBroadcasts() {
        guard !clients.pendingBroadcasts.isEmpty else { return }
        let records = clients.pendingBroadcasts
        clients.pendingBroadcasts.removeAll(keepingCapacity: true)
        for record in records { broadcast(record) }
    }

    /// Sends a transition to every client following the event stream.
    func broadcast(_ record: TransitionRecord) {
        // Only the followers: a transition is part of every wake, and most connections (one
        // per app) never follow.
        for id in clients.followers {
            guard let client = clients[id] else {
                clients.followers.remove(id)
                continue
            }
            guard let filter = client.following, filter.isEmpty || filter == record.app,
                  client.followingStates?.contains(record.to) ?? true else { continue }
            guard client.credentials.uid == 0 || apps[AppID(record.app)]?.uid == client.credentials.uid else { continue }
            send(.transition, record, to: client)
        }
    }

    /// Replies with `result`, or with the lifecycle's refusal.
    func replyAfter<R: Codable & Sendable>(_ outcome: LifecycleOutcome, _ id: UInt64, to client: ClientConnection, result: R) throws {
        if case .rejected(let reason) = outcome.reply { throw ProtocolError(.invalidState, reason) }
        reply(id, result, to: client)
    }
}

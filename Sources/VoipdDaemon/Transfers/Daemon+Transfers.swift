import FoundationEssentials
import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdTransfers
import VoipdVocabulary

/// Background transfers in the daemon (docs/TRANSFERS.md, "What the daemon integration
/// does"): apps' requests go to the transfer service, the apps' presence is fed from their
/// transitions, and the service's deliveries resume or relaunch apps through their lifecycles.
extension Daemon {
    /// At start, after READY=1 (``run()``): the service comes up now if its store holds
    /// tasks (attempts to carry on, ends that wait for their apps, deliveries to make again);
    /// otherwise at the first request that needs it (``transferService()``). Until then it
    /// has nothing to do: no task waits for the power or the network, no app for an event,
    /// and the sessions, limiters and budgets of `state.json` matter only to a request. An
    /// install whose apps do not use transfers never pays for the service's start, its
    /// store's coders, nor its netlink sockets (docs/BENCHMARKS.md, "Start-up and memory at
    /// start").
    func setUpTransfersIfRecorded() {
        if configuration.transfers.enabled, let directory = transferDirectory {
            let names = (try? DirectoryEntry.names(in: directory + "/tasks")) ?? []
            guard names.contains(where: { $0.hasSuffix(".json") }) else { return }
        }
        setUpTransfers()
    }

    /// Starts the service on the records of its store (`<state directory>/<socket>.transfers`),
    /// once (``setUpTransfersIfRecorded()``), with the transfer settings voipd started with: a
    /// reload keeps them (``reloadConfiguration()``).
    func setUpTransfers() {
        guard !transfersTried else { return }
        transfersTried = true
        guard configuration.transfers.enabled else { return }
        guard let directory = transferDirectory else {
            return log.info("background transfers are off: they need a state directory (stateDirectory is \"\")")
        }
        let settings = configuration.transfers.engine.scaled(by: configuration.timeScale)
        do {
            transfers = try TransferHost(configuration: settings, directory: directory, loop: loop, log: log,
                                         agentExecutable: configuration.transfers.agentExecutable,
                                         expensiveNetworks: configuration.transfers.expensiveNetworks)
        } catch {
            return log.error("background transfers are off: cannot open their store in \(directory): \(error)")
        }
        guard let transfers else { return }
        if let said = transfers.loadOverrides() { log.notice("transfers: \(said)") }
        transfers.systemPower = PowerSupply.source(of: PowerSupply.read())
        transfers.readSystemNetwork()
        log.info("transfers: power \(transfers.power.rawValue)\(transfers.powerOverride == nil ? " (from the system)" : ""), network \(describe(transfers.network))\(transfers.networkOverride == NetworkOverride() ? " (from the system)" : "")")
        transfers.service.handle(.power(transfers.power))
        transfers.service.handle(.network(transfers.network))
        // The service takes every app for one not running until told otherwise, and is told
        // after each of an app's transitions: the apps alive already (taken back at start,
        // launched at start, carried by an in-place upgrade) are told now, not at their next.
        for app in apps.values.sorted(by: { $0.name < $1.name }) { noteTransferPresence(app) }
        transfersChanged()
    }

    var transferDirectory: String? {
        let directory: String
        switch configuration.stateDirectory {
        case "": return nil
        case let configured?: directory = configured
        case nil:
            let parent = parentDirectory(of: configuration.socketPath)
            directory = parent.isEmpty ? "/" : parent
        }
        let stem = StateFile.name(forSocket: configuration.socketPath).dropLast(".state".count)
        return directory + "/" + stem + ".transfers"
    }

    /// The service, brought up if it was not yet, or the error that says transfers are off.
    private func transferService() throws(ProtocolError) -> TransferHost {
        setUpTransfers()
        guard let transfers else { throw ProtocolError(.invalidState, "background transfers are off in this voipd (see its log)") }
        return transfers
    }

    // MARK: - Requests

    func transferSession(_ request: TransferSessionRequest, from client: ClientConnection) throws {
        let (host, app) = try transferApp(client)
        let session = TransferSessionID(app: app.name, identifier: request.session)
        switch request.verb {
        case .open:
            try answer(host.service.handle(.openSession(session, request.options)))
            let tasks = host.service.engine.tasks(in: session).map { transferStatus($0, host) }
            replyList(request.id, TransferTasksResult(tasks: tasks), to: client)
        case .finishAndInvalidate, .invalidateAndCancel:
            try answer(host.service.handle(.invalidateSession(session, cancelTasks: request.verb == .invalidateAndCancel)))
            reply(request.id, TransferTasksResult(tasks: []), to: client)
        }
        transfersChanged()
    }

    func transferCreate(_ request: TransferCreateRequest, from client: ClientConnection) throws {
        let (host, app) = try transferApp(client)
        let reply = host.service.handle(.createTask(TransferSessionID(app: app.name, identifier: request.session), request.spec))
        transfersChanged()
        guard case .taskCreated(let task) = reply else { return try answer(reply) }
        log.info("\(app.name): transfer task \(task) created: \(request.kind.rawValue) \(request.url)")
        self.reply(request.id, TransferCreateResult(task: task.rawValue), to: client)
    }

    func transferTask(_ request: TransferTaskRequest, from client: ClientConnection) throws {
        let (host, app) = try transferApp(client)
        let session = TransferSessionID(app: app.name, identifier: request.session)
        let task = TransferTaskID(request.task)
        let input: TransferInput
        switch request.verb {
        case .cancel:
            input = .cancelTask(session, task)
        case .setPriority:
            guard let priority = request.priority else { throw ProtocolError(.badRequest, "setPriority needs a priority") }
            input = .setPriority(session, task, priority)
        case .answerChallenge:
            guard let answer = request.answer?.answer else {
                throw ProtocolError(.badRequest, "answerChallenge needs an answer (useCredential with a user and a password, cancel or performDefaultHandling)")
            }
            input = .answerChallenge(session, task, answer)
        }
        let outcome = host.service.handle(input)
        transfersChanged()
        try answer(outcome)
        reply(request.id, EmptyResult(), to: client)
    }

    func transfersRequest(_ request: TransfersRequest, from client: ClientConnection) throws {
        let host = try transferService()
        let uid = client.credentials.uid
        let tasks = host.service.engine.tasks.values
            .filter { task in
                (request.app == nil || task.session.app == request.app)
                    && (uid == 0 || host.accounts.account(of: task.session.app)?.uid == uid)
            }
            .sorted { $0.id < $1.id }
            .map { transferStatus($0, host) }
        replyList(request.id, TransferTasksResult(tasks: tasks), to: client)
    }

    /// `power` and `network`: the conditions discretionary tasks wait for.
    func transferConditions(_ request: SystemCommandRequest, from client: ClientConnection) throws {
        let host = try transferService()
        if request.verb == .power {
            guard let setting = request.power else { throw ProtocolError(.badRequest, "power needs power: externalPower, battery or auto") }
            switch setting {
            case .externalPower: host.powerOverride = .externalPower
            case .battery: host.powerOverride = .battery
            case .auto:
                host.powerOverride = nil
                host.systemPower = PowerSupply.source(of: PowerSupply.read())
            }
            log.notice("transfers: power \(host.power.rawValue)\(host.powerOverride == nil ? " (from the system)" : ""), set by pid \(client.credentials.pid)")
            host.service.handle(.power(host.power))
        } else {
            guard let setting = request.network, setting != NetworkSetting() else {
                throw ProtocolError(.badRequest, "network needs network: expensive, kind, available or auto")
            }
            let automatic = Set(setting.auto ?? [])
            let given: [(NetworkSetting.Field, Bool)] = [(.expensive, setting.expensive != nil), (.kind, setting.kind != nil), (.available, setting.available != nil)]
            if let both = given.first(where: { $0.1 && automatic.contains($0.0) }) {
                throw ProtocolError(.badRequest, "network: \(both.0.rawValue) is both given and auto")
            }
            if let kind = setting.kind {
                guard !kind.isEmpty, kind.utf8.count <= 32, kind.utf8.allSatisfy({ $0 >= 0x61 && $0 <= 0x7a || $0 >= 0x30 && $0 <= 0x39 || $0 == 0x2d }) else {
                    throw ProtocolError(.badRequest, "a network kind is 1–32 characters of a–z 0–9 -, not \(kind)")
                }
                guard kind != "auto" else { throw ProtocolError(.badRequest, "auto is not a network kind: name kind in auto to follow the system's") }
                host.networkOverride.kind = NetworkKind(kind)
            }
            if let expensive = setting.expensive { host.networkOverride.isExpensive = expensive }
            if let available = setting.available { host.networkOverride.isAvailable = available }
            if !automatic.isEmpty {
                if automatic.contains(.expensive) { host.networkOverride.isExpensive = nil }
                if automatic.contains(.kind) { host.networkOverride.kind = nil }
                if automatic.contains(.available) { host.networkOverride.isAvailable = nil }
                // As `power auto` does: the system's word now, should a change have been missed.
                host.readSystemNetwork()
            }
            log.notice("transfers: network \(describe(host.network))\(host.networkOverride == NetworkOverride() ? " (from the system)" : ""), set by pid \(client.credentials.pid)")
            host.service.handle(.network(host.network))
        }
        do {
            try host.saveOverrides()
        } catch {
            log.error("transfers: the settings of voipctl power and voipctl network hold until voipd restarts, but no longer: \(error)")
        }
        transfersChanged()
        reply(request.id, TransferConditionsResult(power: host.power, powerOverridden: host.powerOverride != nil,
                                                   networkAvailable: host.network.isAvailable, networkKind: host.network.kind.rawValue,
                                                   expensive: host.network.isExpensive, networkOverridden: host.networkOverride.fields), to: client)
    }

    /// The kernel said a power supply, a link, an address or a route changed: the conditions
    /// are read again, and fed to the service if what it sees changed (what `voipctl power`
    /// or `voipctl network` set stays over them).
    func transferConditionsEvent() {
        guard let host = transfers else { return }
        let changes: ConditionsWatch.Changes
        do {
            changes = try host.conditions.drain()
        } catch {
            // Level-triggered: a socket that keeps failing would spin the loop.
            log.error("transfers: power and network changes are no longer watched: \(error)")
            host.conditions.deregister(from: loop)
            return
        }
        if changes.power {
            let before = host.power
            host.systemPower = PowerSupply.source(of: PowerSupply.read())
            if host.power != before {
                log.notice("transfers: power \(host.power.rawValue) (from the system)")
                host.service.handle(.power(host.power))
            }
        }
        if changes.network {
            let before = host.network
            host.readSystemNetwork()
            if host.network != before {
                log.notice("transfers: network \(describe(host.network)) (from the system\(host.networkOverride == NetworkOverride() ? "" : ", with voipctl network's settings over it"))")
                host.service.handle(.network(host.network))
            }
        }
        transfersChanged()
    }

    private func describe(_ network: NetworkStatus) -> String {
        "\(network.kind), \(network.isExpensive ? "expensive" : "not expensive"), \(network.isAvailable ? "available" : "unavailable")"
    }

    /// The app a connection identified as, and the service, once the app's account is bound.
    private func transferApp(_ client: ClientConnection) throws -> (TransferHost, AppRecord) {
        let host = try transferService()
        let app = try identifiedApp(client)
        do {
            _ = try host.accounts.bind(app.name, uid: app.uid, gid: client.credentials.gid)
        } catch let error as TransferAccountError {
            throw ProtocolError(.permissionDenied, error.description)
        } catch {
            throw ProtocolError(.internalError, "cannot record the account of \(app.name)'s transfers: \(error)")
        }
        noteTransferPresence(app)
        return (host, app)
    }

    private func answer(_ reply: TransferReply?) throws(ProtocolError) {
        if case .rejected(let error) = reply { throw ProtocolError(.badRequest, error.description) }
    }

    // MARK: - Status

    func transferStatus(_ task: TransferTask, _ host: TransferHost) -> TransferTaskStatus {
        let state: TransferTaskStatus.State
        var httpStatus: Int?
        var error: String?
        switch task.phase {
        case .waiting: state = .waiting
        case .running: state = .running
        case .challenged(let challenge, _):
            state = .challenged
            httpStatus = challenge.response.status
        case .finished(let completion, _):
            state = .completed
            httpStatus = completion.response?.status
            error = completion.error?.description
        }
        var waitReason: String?
        var waitUntil: Double?
        switch host.service.engine.waitReason(of: task.id, at: Date()) {
        case .notBefore(let date)?: (waitReason, waitUntil) = ("notBefore", date.timeIntervalSince1970)
        case .noNetwork?: waitReason = "noNetwork"
        case .expensiveNetwork?: waitReason = "expensiveNetwork"
        case .onBattery?: waitReason = "onBattery"
        case .budgetSpent(let until)?: (waitReason, waitUntil) = ("budgetSpent", until.timeIntervalSince1970)
        case .queued?: waitReason = "queued"
        case nil: break
        }
        let kind: TransferTaskKind = task.kind.isDownload ? .download : .upload
        return TransferTaskStatus(
            task: task.id.rawValue, app: task.session.app, session: task.session.identifier, kind: kind, url: task.request.url,
            method: task.request.method, path: task.kind.path, priority: task.priority, discretionary: task.isDiscretionary,
            discretionaryInferred: task.discretionaryInferred, state: state, waitReason: waitReason, waitUntil: waitUntil,
            bytesSent: task.progress.bytesSent, bytesExpectedToSend: task.progress.bytesExpectedToSend,
            bytesReceived: task.progress.bytesReceived, bytesExpectedToReceive: task.progress.bytesExpectedToReceive,
            attempts: task.attemptsStarted, lastFailure: task.lastFailure, httpStatus: httpStatus, error: error,
            createdAt: task.createdAt.timeIntervalSince1970, deadline: task.deadline.timeIntervalSince1970,
            bytesPerSecond: task.runningAttempt.map { attempt in
                Double(attempt.countedBytes) / max(Date().timeIntervalSince(attempt.startedAt), 0.001)
            })
    }

    // MARK: - The loop

    /// One of the service's descriptors is ready.
    func transferDescriptorReady(_ token: UInt64, _ events: EpollEvents) {
        transfers?.service.descriptorReady(token: token, events: events)
        transfersChanged()
    }

    func transferTimerFired() {
        transfers?.service.timerFired()
        transfersChanged()
    }

    /// After every call into the service: its timer armed again, and what it handed over
    /// performed once the current batch of lifecycle actions is done.
    func transfersChanged() {
        guard let transfers else { return }
        if let deadline = transfers.service.nextDeadline {
            let delay = max(0, deadline.timeIntervalSinceNow)
            timers.set(.transfers, deadline: now + .milliseconds(Int64((delay * 1000).rounded(.up))))
        } else {
            timers.cancel(.transfers)
        }
    }

    /// Whether the service handed over deliveries or progress not yet performed.
    var hasTransferWork: Bool {
        guard let transfers else { return false }
        return !transfers.pendingDeliveries.isEmpty || !transfers.pendingProgress.isEmpty
    }

    /// Performs the deliveries and progress the service handed over (from
    /// `drainDeferredInputs`, where the lifecycle may be fed).
    func performTransferWork() {
        guard let transfers else { return }
        while !transfers.pendingProgress.isEmpty {
            let (name, event) = transfers.pendingProgress.removeFirst()
            guard let app = apps[AppID(name)], let id = app.client, let client = clients[id] else { continue }
            send(.transferProgress, TransferEventMessage(event), to: client)
        }
        while !transfers.pendingDeliveries.isEmpty {
            let delivery = transfers.pendingDeliveries.removeFirst()
            transfers.inFlight[delivery.id.rawValue] = delivery
            guard let app = apps[AppID(delivery.app)] else {
                log.info("\(delivery.app): transfer events wait: voipd knows no such app to launch")
                failTransferDelivery(delivery)
                continue
            }
            log.info("\(app.name): \(delivery.events.count) transfer event(s) in delivery \(delivery.id) (\(delivery.wake.rawValue))")
            let outcome = feed(app, .transferEventsReady(delivery: delivery.id.rawValue))
            if case .rejected(let reason) = outcome.reply {
                log.info("\(app.name): transfer events wait: \(reason)")
                failTransferDelivery(delivery)
            }
        }
    }

    private func failTransferDelivery(_ delivery: TransferDelivery) {
        guard let transfers else { return }
        transfers.inFlight[delivery.id.rawValue] = nil
        transfers.service.handle(.deliveryFailed(app: delivery.app, delivery.id))
        transfersChanged()
    }

    /// The payload of a `backgroundTransferEvents` event being sent. A delivery has at most
    /// `maximumEventsPerDelivery` events, but their responses' headers (up to 32 KiB each) may
    /// not fit in one frame together: then the headers are left out, the statuses kept.
    func transferPayload(for event: AppEvent) -> TransferEventsPayload? {
        guard let id = event.delivery, let delivery = transfers?.inFlight[id] else { return nil }
        var payload = TransferEventsPayload(delivery: id, events: delivery.events.map(TransferEventMessage.init))
        let budget = Frame.maximumSize - Frame.headerSize - 4096
        if codec.encodedSize(payload) > budget {
            log.info("\(delivery.app): transfer delivery \(id) too large for one frame: the responses' headers are left out")
            for index in payload.events.indices {
                payload.events[index].completion?.response?.headers = HTTPHeaders()
                payload.events[index].challenge?.response.headers = HTTPHeaders()
            }
        }
        return payload
    }

    /// The app acknowledged an event: if it carried transfer events, they are handled.
    func transferEventAcknowledged(_ app: AppRecord, eventID: UInt64) {
        guard let transfers, let event = app.lifecycle.inFlight, event.id == eventID, let id = event.delivery,
              let delivery = transfers.inFlight.removeValue(forKey: id) else { return }
        transfers.service.handle(.eventsHandled(app: app.name, delivery.id))
        transfersChanged()
    }

    /// Feeds the app's presence to the service when it changed (apps that use transfers
    /// only), after each batch of the app's lifecycle actions. An app is suspended for the
    /// service once the kernel has confirmed its stop, as it is in the record
    /// (`voipctl events`): what arrives while the stop is only decided is handed over with
    /// the continue that cancels it, not counted by the resume rate limiter, as the record
    /// shows no resume either.
    func noteTransferPresence(_ app: AppRecord) {
        guard let transfers, transfers.accounts.account(of: app.name) != nil else { return }
        let presence: AppPresence
        switch app.lifecycle.phase {
        case .active, .inactive: presence = .foreground
        case .background, .suspending: presence = .background
        case .suspended: presence = .suspended
        case .notRunning, .terminated: presence = .notRunning
        }
        guard transfers.presence[app.name] != presence else { return }
        transfers.presence[app.name] = presence
        // Deliveries the app will not acknowledge now: a stopped app's wait until it runs
        // again; an ended app's are made again by the service itself.
        if presence == .suspended || presence == .notRunning {
            for (id, delivery) in transfers.inFlight where delivery.app == app.name {
                transfers.inFlight[id] = nil
                if presence == .suspended { transfers.service.handle(.deliveryFailed(app: app.name, delivery.id)) }
            }
        }
        transfers.service.handle(.appPresence(app: app.name, presence))
        transfersChanged()
    }
}

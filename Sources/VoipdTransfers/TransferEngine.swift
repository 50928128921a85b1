import FoundationEssentials

/// The background-transfer service's logic: a pure state machine. ``handle(_:now:)`` takes an
/// input and the wall-clock time and returns the reply and the actions to perform, in order;
/// it performs no system calls and reads no clock. The service arms one timer for
/// ``nextDeadline`` and feeds ``TransferInput/tick`` when it fires.
///
/// Wall-clock time, because tasks outlive voipd and the machine: a resource timeout of
/// seven days and a daily budget mean days of the calendar.
public struct TransferEngine: Sendable {
    /// What the engine keeps besides the tasks: written with ``TransferAction/saveState``.
    public struct DurableState: Codable, Hashable, Sendable {
        public var sessions: [TransferSessionID: SessionRecord] = [:]
        public var apps: [String: AppRecord] = [:]
        public var budgets = NetworkBudgets()
        public var conditions = TransferConditions()
        public var nextTaskID: UInt64 = 1
        public var nextDeliveryID: UInt64 = 1

        public init() {}
    }

    public struct SessionRecord: Codable, Hashable, Sendable {
        public var options: TransferOptions
        /// No new tasks; removed when its tasks are gone.
        public var invalidated = false
    }

    /// What the engine knows of an app.
    public struct AppRecord: Codable, Hashable, Sendable {
        public var presence: AppPresence = .notRunning
        public var limiter = ResumeRateLimiter()
        /// Resumed or relaunched for its events, and not suspended, ended or brought to the
        /// foreground since.
        public var wokenForEvents = false
        /// A wake for a delivery failed: nothing more is tried until the app runs again.
        public var unreachable = false
    }

    public var configuration: TransferConfiguration
    public internal(set) var state: DurableState
    public internal(set) var tasks: [TransferTaskID: TransferTask] = [:]
    /// Counters since this engine started (not durable).
    public internal(set) var statistics = TransferStatistics()

    var now = Date(timeIntervalSince1970: 0)
    var actions: [TransferAction] = []
    var reply: TransferReply?
    var changedTasks: Set<TransferTaskID> = []
    var stateChanged = false

    public init(configuration: TransferConfiguration = TransferConfiguration()) {
        self.configuration = configuration
        state = DurableState()
    }

    /// An engine carrying on from records a previous one left (voipd restarted, or the
    /// machine did). Attempts that were running are lost with their agent: their tasks wait
    /// again (a download resumes from its partial file); deliveries the apps had not handled
    /// are made again; apps are not running until voipd says otherwise.
    public init(configuration: TransferConfiguration, restoring state: DurableState, tasks: [TransferTask]) {
        self.configuration = configuration
        self.state = state
        for var task in tasks {
            switch task.phase {
            case .running: task.phase = .waiting(notBefore: nil)
            case .challenged(let challenge, .sent): task.phase = .challenged(challenge, .pending(since: .distantPast))
            case .finished(let completion, .sent): task.phase = .finished(completion, .pending(since: .distantPast))
            default: break
            }
            self.tasks[task.id] = task
            self.state.nextTaskID = max(self.state.nextTaskID, task.id.rawValue + 1)
        }
        for app in self.state.apps.keys {
            self.state.apps[app]?.presence = .notRunning
            self.state.apps[app]?.wokenForEvents = false
            self.state.apps[app]?.unreachable = false
        }
    }

    /// Feeds one input at `now`; returns the reply (for requests) and the actions.
    public mutating func handle(_ input: TransferInput, now: Date) -> TransferStep {
        self.now = now
        actions = []
        reply = nil
        apply(input)
        settle()
        flushRecords()
        let step = TransferStep(reply: reply, actions: actions)
        actions = []
        return step
    }

    // MARK: - Queries

    /// The tasks of a session, by number.
    public func tasks(in session: TransferSessionID) -> [TransferTask] {
        tasks.values.filter { $0.session == session }.sorted { $0.id < $1.id }
    }

    public func app(_ name: String) -> AppRecord { state.apps[name] ?? AppRecord() }

    public var durableState: DurableState { state }

    // MARK: - Inputs

    private mutating func apply(_ input: TransferInput) {
        switch input {
        case .openSession(let id, let options): respond { (engine: inout TransferEngine) throws(TransferRequestError) in try engine.openSession(id, options) }
        case .createTask(let session, let spec): respond { (engine: inout TransferEngine) throws(TransferRequestError) in try engine.createTask(spec, in: session) }
        case .cancelTask(let session, let id): respond { (engine: inout TransferEngine) throws(TransferRequestError) in try engine.cancelTask(id, in: session) }
        case .setPriority(let session, let id, let priority):
            respond { (engine: inout TransferEngine) throws(TransferRequestError) in try engine.setPriority(priority, of: id, in: session) }
        case .answerChallenge(let session, let id, let answer):
            respond { (engine: inout TransferEngine) throws(TransferRequestError) in try engine.answerChallenge(id, in: session, with: answer) }
        case .invalidateSession(let session, let cancelTasks):
            respond { (engine: inout TransferEngine) throws(TransferRequestError) in try engine.invalidateSession(session, cancelTasks: cancelTasks) }
        case .eventsHandled(let app, let delivery): eventsHandled(app, delivery)
        case .deliveryFailed(let app, let delivery): deliveryFailed(app, delivery)
        case .appPresence(let app, let presence): presenceChanged(app, presence)
        case .power(let power):
            state.conditions.power = power
            stateChanged = true
        case .network(let network): networkChanged(network)
        case .attempt(let report): attemptReported(report)
        case .tick: break
        }
    }

    private mutating func respond(_ body: (inout TransferEngine) throws(TransferRequestError) -> TransferReply) {
        do {
            reply = try body(&self)
        } catch {
            reply = .rejected(error)
        }
    }

    private mutating func openSession(_ id: TransferSessionID, _ options: TransferOptions?) throws(TransferRequestError) -> TransferReply {
        try TransferValidation.validateSessionIdentifier(id.identifier)
        let options = options ?? configuration.defaultOptions
        try TransferValidation.validate(options)
        if state.sessions[id] == nil {
            let count = state.sessions.keys.filter { $0.app == id.app }.count
            guard count < configuration.maximumSessionsPerApp else {
                throw TransferRequestError(.tooManySessions, "\(id.app) has \(count) sessions, the most allowed")
            }
        }
        state.sessions[id] = SessionRecord(options: options)
        if state.apps[id.app] == nil { state.apps[id.app] = AppRecord() }
        stateChanged = true
        return .done
    }

    private mutating func createTask(_ spec: TransferTaskSpec, in sessionID: TransferSessionID) throws(TransferRequestError) -> TransferReply {
        guard let session = state.sessions[sessionID], !session.invalidated else {
            throw TransferRequestError(.unknownSession, "no open session \"\(sessionID.identifier)\"")
        }
        try TransferValidation.validate(spec)
        let options = spec.options(in: session.options)
        try TransferValidation.validate(options)
        let count = tasks.values.filter { $0.session.app == sessionID.app }.count
        guard count < configuration.maximumTasksPerApp else {
            throw TransferRequestError(.tooManyTasks, "\(sessionID.app) has \(count) tasks, the most allowed")
        }
        let app = self.app(sessionID.app)
        // Seed 003, iOS 8: "if a new task is created while the app was resumed by
        // nsurlsessiond, that task gets delayed by that work period."
        var notBefore: Date?
        if configuration.resumeLimiter.placement == .delayNewTasks && app.wokenForEvents {
            let period = app.limiter.period(at: now, curve: configuration.resumeLimiter)
            if period > 0 { notBefore = now.addingTimeInterval(period) }
        }
        let id = TransferTaskID(state.nextTaskID)
        state.nextTaskID += 1
        stateChanged = true
        tasks[id] = TransferTask(id: id, session: sessionID, spec: spec, options: options, createdAt: now,
                                 discretionaryInferred: app.presence != .foreground, notBefore: notBefore)
        changedTasks.insert(id)
        return .taskCreated(id)
    }

    private func task(_ id: TransferTaskID, in session: TransferSessionID) throws(TransferRequestError) -> TransferTask {
        guard let task = tasks[id], task.session == session else {
            throw TransferRequestError(.unknownTask, "no task \(id) in session \"\(session.identifier)\"")
        }
        return task
    }

    private mutating func cancelTask(_ id: TransferTaskID, in session: TransferSessionID) throws(TransferRequestError) -> TransferReply {
        // Cancelling a task that has ended does nothing, as with URLSessionTask.cancel().
        if try !task(id, in: session).isFinished { finish(id, error: .cancelled) }
        return .done
    }

    private mutating func setPriority(_ priority: Double, of id: TransferTaskID, in session: TransferSessionID) throws(TransferRequestError) -> TransferReply {
        _ = try task(id, in: session)
        guard priority.isFinite, (0...1).contains(priority) else {
            throw TransferRequestError(.invalidValue, "priority must be between 0 and 1, not \(priority)")
        }
        tasks[id]?.priority = priority
        changedTasks.insert(id)
        return .done
    }

    private mutating func answerChallenge(_ id: TransferTaskID, in session: TransferSessionID, with answer: ChallengeAnswer) throws(TransferRequestError) -> TransferReply {
        guard case .challenged(let challenge, _) = try task(id, in: session).phase else {
            throw TransferRequestError(.invalidState, "task \(id) is not waiting for a challenge's answer")
        }
        switch answer {
        case .useCredential(let user, let password):
            guard !user.contains(":"), user.utf8.count + password.utf8.count <= 4096,
                  !(user + password).unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
                throw TransferRequestError(.invalidValue, "a Basic credential's user has no colon, and neither part holds control characters")
            }
            tasks[id]?.credential = TransferCredential(user: user, password: password)
            // Seed 003: "this delay does not apply to existing tasks that have been stalled
            // while they handle an authentication challenge".
            tasks[id]?.phase = .waiting(notBefore: nil)
            changedTasks.insert(id)
        case .cancel:
            finish(id, error: .cancelled)
        case .performDefaultHandling:
            finish(id, response: challenge.response, error: .http(status: challenge.response.status))
        }
        return .done
    }

    private mutating func invalidateSession(_ id: TransferSessionID, cancelTasks: Bool) throws(TransferRequestError) -> TransferReply {
        guard state.sessions[id] != nil else { throw TransferRequestError(.unknownSession, "no session \"\(id.identifier)\"") }
        state.sessions[id]?.invalidated = true
        stateChanged = true
        if cancelTasks {
            for task in self.tasks(in: id) where !task.isFinished { finish(task.id, error: .cancelled) }
        }
        return .done
    }

    private mutating func eventsHandled(_ app: String, _ delivery: DeliveryID) {
        for task in tasks.values where task.session.app == app && task.deliveryState == .sent(delivery) {
            switch task.phase {
            case .finished:
                tasks[task.id] = nil
            case .challenged(let challenge, _):
                tasks[task.id]?.phase = .challenged(challenge, .handled)
            case .waiting, .running:
                continue
            }
            changedTasks.insert(task.id)
        }
    }

    private mutating func deliveryFailed(_ app: String, _ delivery: DeliveryID) {
        returnToPending(app) { $0 == .sent(delivery) }
        state.apps[app, default: AppRecord()].unreachable = true
    }

    /// Events sent and not handled become pending again.
    private mutating func returnToPending(_ app: String, where matches: (DeliveryState) -> Bool) {
        for task in tasks.values where task.session.app == app {
            switch task.phase {
            case .finished(let completion, let delivery) where matches(delivery):
                tasks[task.id]?.phase = .finished(completion, .pending(since: now))
            case .challenged(let challenge, let delivery) where matches(delivery):
                tasks[task.id]?.phase = .challenged(challenge, .pending(since: now))
            default:
                continue
            }
            changedTasks.insert(task.id)
        }
    }

    private mutating func presenceChanged(_ name: String, _ presence: AppPresence) {
        let known = state.apps[name] != nil
        var app = self.app(name)
        let limiter = app.limiter
        // Woken for its events, and the wake has not failed: this is that resume.
        let resumedForEvents = app.wokenForEvents && !app.unreachable && (app.presence == .suspended || app.presence == .notRunning)
        app.presence = presence
        switch presence {
        case .foreground:
            // Seed 003: the work period resets "when the user brings your app to the front",
            // and the inferred discretionary flag is dropped.
            app.limiter.reset()
            app.wokenForEvents = false
            app.unreachable = false
            for task in tasks.values where task.session.app == name && task.discretionaryInferred {
                tasks[task.id]?.discretionaryInferred = false
                changedTasks.insert(task.id)
            }
        case .background:
            app.unreachable = false
        case .suspended:
            app.wokenForEvents = false
        case .notRunning:
            app.wokenForEvents = false
            returnToPending(name) { if case .sent = $0 { return true } else { return false } }
        }
        // Presence, and what goes with it, is not carried over a restart (voipd says again):
        // only the limiter is worth a record. voipd feeds the presence on the wake path of
        // every app with transfers, which must not wait for a flush to disk.
        if !known || app.limiter != limiter { stateChanged = true }
        // The resume voipd performed for a delivery, after the delivery's records were
        // written: the work period counts from now. Not worth a record of its own (it moves
        // the instant by the time a write took; the next record carries it).
        if presence == .background && resumedForEvents { app.limiter.resumeHappened(at: now) }
        state.apps[name] = app
    }

    private mutating func networkChanged(_ network: NetworkStatus) {
        let before = state.conditions.network
        state.conditions.network = network
        stateChanged = true
        // A new network is worth trying at once: tasks backing off after failures go now.
        guard network.isAvailable, network != before else { return }
        for task in tasks.values where task.failuresInARow > 0 {
            if case .waiting(.some) = task.phase {
                tasks[task.id]?.phase = .waiting(notBefore: nil)
                changedTasks.insert(task.id)
            }
        }
    }

    /// The records to write go first: a record is durable before anything it describes is
    /// seen outside (an attempt started, an app told).
    private mutating func flushRecords() {
        var records = changedTasks.sorted().map { id in tasks[id].map { TransferAction.saveTask($0) } ?? .forgetTask(id) }
        if stateChanged { records.append(.saveState) }
        actions = records + actions
        changedTasks = []
        stateChanged = false
    }
}

import Foundation
import Testing
import VoipdTransfers

/// A transfer engine with a clock, fed the way the service feeds it. Every step is checked
/// against the invariants; a violation is recorded at the caller's line.
struct Driver {
    private(set) var engine: TransferEngine
    private(set) var now = Date(timeIntervalSince1970: 1_800_000_000)

    static let app = "phone"
    static let session = TransferSessionID(app: app, identifier: "bg")

    init(configuration: TransferConfiguration = .testing) {
        engine = TransferEngine(configuration: configuration)
    }

    /// On the test configuration as `change` changes it.
    init(configuring change: (inout TransferConfiguration) -> Void) {
        var configuration = TransferConfiguration.testing
        change(&configuration)
        self.init(configuration: configuration)
    }

    init(restoring engine: TransferEngine) {
        self.engine = engine
    }

    /// A driver on the test configuration (as `change` changes it) whose app is `presence`,
    /// with the default session open: where most tests start.
    static func withOpenSession(_ presence: AppPresence = .foreground, options: TransferOptions? = nil,
                                sourceLocation: SourceLocation = #_sourceLocation,
                                configuring change: (inout TransferConfiguration) -> Void = { _ in }) -> Driver {
        var driver = Driver(configuring: change)
        driver.open(presence, options: options, sourceLocation: sourceLocation)
        return driver
    }

    var configuration: TransferConfiguration {
        get { engine.configuration }
        set { engine.configuration = newValue }
    }

    mutating func advance(by seconds: Double) { now = now.addingTimeInterval(seconds) }

    mutating func advance(to date: Date) { if date > now { now = date } }

    @discardableResult
    mutating func feed(_ input: TransferInput, after seconds: Double = 0, sourceLocation: SourceLocation = #_sourceLocation) -> TransferStep {
        advance(by: seconds)
        let step = engine.handle(input, now: now)
        for violation in Invariants.violations(of: engine, at: now, step: step) {
            Issue.record("after \(input): \(violation)", sourceLocation: sourceLocation)
        }
        return step
    }

    /// Moves the clock to the engine's next deadline and feeds a tick.
    @discardableResult
    mutating func tickToDeadline(sourceLocation: SourceLocation = #_sourceLocation) -> TransferStep {
        guard let deadline = engine.nextDeadline else {
            Issue.record("no deadline", sourceLocation: sourceLocation)
            return TransferStep(reply: nil, actions: [])
        }
        advance(to: deadline)
        return feed(.tick, sourceLocation: sourceLocation)
    }

    /// Tells the engine the app is `presence` and opens the default session.
    private mutating func open(_ presence: AppPresence, options: TransferOptions?, sourceLocation: SourceLocation) {
        appBecomes(presence, sourceLocation: sourceLocation)
        feed(.openSession(Self.session, options), sourceLocation: sourceLocation)
    }

    /// Tells the engine that `app` (the driver's own by default) is now `presence`.
    @discardableResult
    mutating func appBecomes(_ presence: AppPresence, app: String = app, sourceLocation: SourceLocation = #_sourceLocation) -> TransferStep {
        feed(.appPresence(app: app, presence), sourceLocation: sourceLocation)
    }

    /// Completes `id` while the app is suspended: the app is resumed in the background at
    /// the deadline the limiter sets, handles the events, and is suspended again.
    mutating func completeWhileSuspended(_ id: TransferTaskID, sourceLocation: SourceLocation = #_sourceLocation) {
        complete(id, sourceLocation: sourceLocation)
        tickToDeadline(sourceLocation: sourceLocation)
        appBecomes(.background, sourceLocation: sourceLocation)
        appBecomes(.suspended, sourceLocation: sourceLocation)
    }

    /// Creates a task and returns its id and the step.
    @discardableResult
    mutating func create(_ spec: TransferTaskSpec, in session: TransferSessionID = session,
                         sourceLocation: SourceLocation = #_sourceLocation) -> (id: TransferTaskID, step: TransferStep) {
        let step = feed(.createTask(session, spec), sourceLocation: sourceLocation)
        guard case .taskCreated(let id)? = step.reply else {
            Issue.record("not created: \(String(describing: step.reply))", sourceLocation: sourceLocation)
            return (TransferTaskID(0), step)
        }
        return (id, step)
    }

    @discardableResult
    mutating func download(_ name: String, host: String = "example.org", priority: Double = 0.5,
                           sourceLocation: SourceLocation = #_sourceLocation) -> (id: TransferTaskID, step: TransferStep) {
        create(.download("https://\(host)/\(name)", to: "/home/phone/\(name)", priority: priority), sourceLocation: sourceLocation)
    }

    func task(_ id: TransferTaskID) -> TransferTask? { engine.tasks[id] }

    func attempt(of id: TransferTaskID) -> Int { engine.tasks[id]?.runningAttempt?.number ?? 0 }

    /// The agent's report for the current attempt of `id`.
    @discardableResult
    mutating func report(_ id: TransferTaskID, _ event: AttemptReport.Event, after seconds: Double = 0,
                         sourceLocation: SourceLocation = #_sourceLocation) -> TransferStep {
        feed(.attempt(AttemptReport(task: id, attempt: attempt(of: id), event: event)), after: seconds, sourceLocation: sourceLocation)
    }

    /// The agent's report that `id`'s server answered with `response`, a 401 challenge.
    @discardableResult
    mutating func challenge(_ id: TransferTaskID, with response: HTTPResponseHead = HTTPResponseHead(status: 401, headers: ["WWW-Authenticate": "Basic"]),
                            sourceLocation: SourceLocation = #_sourceLocation) -> TransferStep {
        report(id, .ended(.challenged(response), TransferProgress()), sourceLocation: sourceLocation)
    }

    /// A successful download of `id` (response, then the end).
    @discardableResult
    mutating func complete(_ id: TransferTaskID, bytes: Int64 = 1000, status: Int = 200, after seconds: Double = 0,
                           sourceLocation: SourceLocation = #_sourceLocation) -> TransferStep {
        let head = HTTPResponseHead(status: status, headers: ["Content-Length": "\(bytes)"])
        report(id, .response(head, resumedFrom: 0), after: seconds, sourceLocation: sourceLocation)
        let progress = TransferProgress(bytesReceived: bytes, bytesExpectedToReceive: bytes)
        let outcome: AttemptOutcome = head.isSuccess ? .completed(head) : .httpError(head)
        return report(id, .ended(outcome, progress), sourceLocation: sourceLocation)
    }
}

extension TransferConfiguration {
    /// Round numbers for the tests: limiter 10 s doubling to 160 s, coalescing 2 s, retries
    /// from 1 s to 8 s, a budget of 1000 bytes a day.
    static var testing: TransferConfiguration {
        var c = TransferConfiguration()
        c.resumeLimiter = ResumeLimiterCurve(initialPeriod: 10, maximumPeriod: 160, coalescingWindow: 2)
        c.retry = RetryCurve(initialDelay: 1, maximumDelay: 8)
        c.dailyBudget = 1000
        return c
    }
}

extension TransferStep {
    var started: [AttemptOrder] { actions.compactMap { if case .start(_, let order) = $0 { return order } else { return nil } } }
    var startedTasks: [TransferTaskID] { started.map(\.task) }
    var stops: [(task: TransferTaskID, keepPartial: Bool)] {
        actions.compactMap { if case .stop(_, let task, _, let keep) = $0 { return (task, keep) } else { return nil } }
    }
    var deliveries: [TransferDelivery] { actions.compactMap { if case .deliver(let d) = $0 { return d } else { return nil } } }
    var delivery: TransferDelivery? { deliveries.first }
    var progressEvents: [TransferEvent] { actions.compactMap { if case .progress(_, let e) = $0 { return e } else { return nil } } }
    var discarded: [String] { actions.compactMap { if case .discardPartial(_, _, let path) = $0 { return path } else { return nil } } }
    var savedTasks: [TransferTaskID] { actions.compactMap { if case .saveTask(let t) = $0 { return t.id } else { return nil } } }
    var forgotten: [TransferTaskID] { actions.compactMap { if case .forgetTask(let id) = $0 { return id } else { return nil } } }
    var savedState: Bool { actions.contains(.saveState) }
    var rejection: TransferRequestError.Code? { if case .rejected(let e)? = reply { return e.code } else { return nil } }
}

extension TransferEvent {
    var completion: TransferCompletion? { if case .completed(let c) = kind { return c } else { return nil } }
    var challenge: AuthenticationChallenge? { if case .challenge(let c) = kind { return c } else { return nil } }
}

/// The lifecycle of one app: a pure state machine. ``handle(_:now:)`` takes an input and
/// returns the actions the daemon must perform, in order. It is the single source of truth
/// for an app's state; it performs no system calls and reads no clock (`now` is given).
///
/// The machine walks toward its goal (foreground or background) one event at a time: at
/// most one event is in flight, the next is sent when the app acknowledges it, and the
/// state changes when the event that announces it is sent (UIKit's order:
/// willResignActive → inactive, didEnterBackground → background, willEnterForeground →
/// inactive, didBecomeActive → active). An app without a control connection cannot
/// acknowledge, so its events count as acknowledged at once.
/// It is `Codable` so that an in-place upgrade of the daemon carries every app over as is.
public struct AppLifecycle: Sendable, Codable {
    /// The durations; a configuration reload may change them (for timers started later).
    public var timings: LifecycleTimings
    public var policy: AppPolicy {
        // A changed policy says anew whether launched processes are expected to connect.
        didSet { if policy.speaksProtocol != oldValue.speaksProtocol { expectsConnection = policy.speaksProtocol } }
    }

    public private(set) var phase: LifecyclePhase = .notRunning
    public private(set) var goal: LifecycleGoal = .foreground
    public private(set) var interrupted = false
    public private(set) var connection: ControlConnection = .none
    /// The event sent and not yet acknowledged.
    public private(set) var inFlight: AppEvent?
    /// Events waiting to be sent, in order.
    public private(set) var outbox: [AppEvent] = []
    /// Open background tasks by id, with their names.
    public private(set) var openTasks: [UInt64: String] = [:]
    /// When the background-task budget runs out (nil: no budget running).
    public private(set) var taskBudgetDeadline: Duration?
    public private(set) var keepAliveInterval: Duration?
    /// Why the process is being ended (set when the kill or willTerminate is decided).
    public private(set) var pendingTermination: TerminationReason?
    /// Why the process ended last.
    public private(set) var terminationReason: TerminationReason?
    public private(set) var locked = false
    public private(set) var heldSockets = 0
    /// voipSocketReadable and keepAlive events delivered.
    public private(set) var wakeCount = 0
    /// Times the process was started (first launch included).
    public private(set) var launchCount = 0
    /// Deaths in a row of a process that ran less than `relaunchThrottle`.
    public private(set) var quickDeaths = 0
    public private(set) var relaunchScheduled = false
    /// The app was ended on purpose (force quit, terminate, exits-on-suspend): data does not
    /// bring it back until it is launched again. A crash, the watchdog or memory pressure do
    /// not count: a VoIP app is relaunched after those, as iOS did.
    public private(set) var endedByChoice = false

    private var nextEventID: UInt64 = 1
    private var nextTaskID: UInt64 = 1
    private var expectsConnection: Bool
    private var killSent = false
    /// Why the stop in progress was decided, for the transition once it is confirmed.
    private var suspensionReason = ""
    /// The daemon is stopping: the app is no longer walked toward its goal (which could stop it).
    private var shuttingDown = false
    /// A wake (data, keep-alive, relaunch) whose budget is running and that the app has not
    /// acknowledged: an app that cannot acknowledge keeps the whole budget to do its work.
    private var wakeUnhandled = false
    private var launchedAt: Duration?
    private var now: Duration = .zero
    private var actions: [LifecycleAction] = []

    /// `screenLocked`: the screen's state when the app becomes known (later changes come
    /// as inputs).
    public init(timings: LifecycleTimings = LifecycleTimings(), policy: AppPolicy = AppPolicy(), screenLocked: Bool = false) {
        self.timings = timings
        self.policy = policy
        self.expectsConnection = policy.speaksProtocol
        self.locked = screenLocked
    }

    /// The public state.
    public var state: AppState { phase.state }

    /// Whether `.socketReady` would resume the app now: a question about the next input
    /// that changes nothing, so that the daemon can send the resume first on the wake path
    /// (the `.resume` in the answer to the input then finds the process already running).
    public var resumesOnSocketReady: Bool { phase.isStopped && pendingTermination == nil }

    /// Feeds one input; returns the actions to perform, in order.
    public mutating func handle(_ input: LifecycleInput, now: Duration) -> [LifecycleAction] {
        self.now = now
        actions = []
        apply(input)
        settle()
        let result = actions
        actions = []
        return result
    }

    // MARK: - Inputs

    private mutating func apply(_ input: LifecycleInput) {
        switch input {
        case .launched(let inBackground, let reason): launched(inBackground: inBackground, reason: reason)
        case .launchFailed(let message): launchFailed(message)
        case .connected: connected()
        case .disconnected: disconnected()
        case .foregroundRequested: foregroundRequested()
        case .backgroundRequested: backgroundRequested()
        case .interruptionBegan: interruptionBegan()
        case .interruptionEnded: interruptionEnded()
        case .acknowledged(let id): acknowledged(id)
        case .stopConfirmed: stopConfirmed()
        case .socketReady(let readiness): socketReady(readiness)
        case .processExited(let end): processExited(end)
        case .beginBackgroundTask(let name): beginBackgroundTask(name)
        case .endBackgroundTask(let id): endBackgroundTask(id)
        case .setKeepAlive(let interval): setKeepAlive(interval)
        case .timerFired(let timer): timerFired(timer)
        case .terminateRequested: terminateRequested()
        case .killRequested: killRequested()
        case .memoryPressureKill: memoryPressureKill()
        case .reclaimRequested: reclaimRequested()
        case .screenLocked: screenLocked()
        case .screenUnlocked: locked = false
        case .heldSocketsChanged(let count): heldSocketsChanged(count)
        case .shutdown: shutdown()
        }
    }

    private mutating func launched(inBackground: Bool, reason: String) {
        guard !phase.isAlive else { return reject("already running") }
        cancelAllTimers()
        killSent = false
        shuttingDown = false
        pendingTermination = nil
        relaunchScheduled = false
        endedByChoice = false
        launchedAt = now
        launchCount += 1
        goal = inBackground ? .background : .foreground
        interrupted = false
        connection = expectsConnection ? .awaiting : .none
        if connection == .awaiting { emit(.startTimer(.connect, after: timings.connectTimeout)) }
        emit(.disarmSockets)
        setPhase(inBackground ? .background : .active, reason)
        if inBackground {
            // A relaunch in the background is a wake: its budgets are those of a resume.
            startTaskBudget(timings.resumedTaskBudget)
            emit(.startTimer(.wakeBudget, after: timings.wakeBudget))
            wakeUnhandled = true
        }
    }

    private mutating func launchFailed(_ message: String) {
        // The process that runs is not the one that failed to start.
        guard !phase.isAlive else { return reject("already running") }
        relaunchScheduled = false
        outbox.removeAll()
        let reason = TerminationReason(.launchFailed, message)
        terminationReason = reason
        setPhase(.terminated, reason.description)
    }

    private mutating func connected() {
        guard phase.isAlive else { return }
        expectsConnection = true
        connection = .connected
        emit(.cancelTimer(.connect))
    }

    private mutating func disconnected() {
        guard connection != .none else { return }
        connection = .none
        emit(.cancelTimer(.connect))
        // Nobody is left to acknowledge what was sent: it counts as acknowledged, but like an
        // event that could not be delivered, it leaves a wake its whole budget.
        if let event = inFlight {
            inFlight = nil
            emit(.cancelTimer(.acknowledgement))
            acknowledgementArrived(event, delivered: false)
        }
    }

    private mutating func foregroundRequested() {
        guard phase.isAlive else {
            guard policy.canLaunch else { return reject("not running, and voipd does not know how to launch it") }
            return emit(.launch(inBackground: false, reason: "foreground requested"))
        }
        guard pendingTermination == nil else { return reject("terminating") }
        goal = .foreground
    }

    private mutating func backgroundRequested() {
        guard phase.isAlive else { return reject("not running") }
        guard pendingTermination == nil else { return reject("terminating") }
        goal = .background
        interrupted = false
    }

    private mutating func interruptionBegan() {
        guard phase.isAlive, goal == .foreground, phase == .active || phase == .inactive else {
            return reject("only an app in the foreground can be interrupted (state: \(state.rawValue))")
        }
        guard !interrupted else { return reject("already interrupted") }
        interrupted = true
    }

    private mutating func interruptionEnded() {
        guard interrupted, goal == .foreground, phase.isAlive else { return reject("not interrupted") }
        interrupted = false
    }

    private mutating func acknowledged(_ id: UInt64) {
        guard let event = inFlight, event.id == id else { return }
        acknowledgementArrived(event)
    }

    private mutating func stopConfirmed() {
        guard phase == .suspending else { return }
        setPhase(.suspended, suspensionReason)
        if locked { emit(.reclaimSockets(reason: "screen locked")) }
        if let after = timings.reclaimAfterSuspension { emit(.startTimer(.reclaim, after: after)) }
    }

    private mutating func socketReady(_ readiness: SocketReadiness) {
        switch phase {
        case .suspending, .suspended:
            guard pendingTermination == nil else { return }
            wake(reason: "voip socket \(readiness.name) readable")
            enqueue(.voipSocketReadable, socket: readiness, reason: "data on \(readiness.name)")
        case .notRunning, .terminated:
            relaunchForData(readiness)
        case .active, .inactive, .background:
            // The app runs and reads its own sockets; a late report is stale.
            break
        }
    }

    private mutating func processExited(_ end: ProcessEnd) {
        guard phase.isAlive else { return }
        cancelAllTimers()
        let reason: TerminationReason
        if let pending = pendingTermination {
            reason = pending
        } else {
            switch end {
            case .exited(let code): reason = TerminationReason(.exited, "exited with status \(code)")
            case .signaled(_, let name): reason = TerminationReason(.crashed, "killed by \(name)")
            case .unknown: reason = TerminationReason(.exited, "exited (status unknown: not a child of voipd)")
            }
        }
        if let launchedAt, now - launchedAt < timings.relaunchThrottle { quickDeaths += 1 } else { quickDeaths = 0 }
        terminationReason = reason
        pendingTermination = nil
        killSent = false
        inFlight = nil
        outbox.removeAll()
        openTasks.removeAll()
        taskBudgetDeadline = nil
        keepAliveInterval = nil
        interrupted = false
        wakeUnhandled = false
        connection = .none
        setPhase(.terminated, reason.description)
        endedByChoice = [.forceQuit, .terminated, .exitsOnSuspend].contains(reason.code)
        // Held sockets outlive the process; watch them so data can bring it back.
        emit(relaunchesOnData ? .armSockets : .disarmSockets)
    }

    /// Whether data on a held socket would relaunch the app now that it is not running.
    private var relaunchesOnData: Bool {
        heldSockets > 0 && policy.canLaunch && policy.relaunchOnData && !endedByChoice && !relaunchScheduled
    }

    private mutating func beginBackgroundTask(_ name: String) {
        guard phase.isAlive, pendingTermination == nil else { return emit(.backgroundTaskBegan(id: 0)) }
        // In the foreground a task costs nothing; in the background it needs budget left.
        if phase != .active && phase != .inactive {
            // Once the stop is decided the budget is gone: a request sent just before it took
            // hold is refused, and the app handles that as iOS apps handled an invalid task.
            guard let deadline = taskBudgetDeadline, now < deadline else { return emit(.backgroundTaskBegan(id: 0)) }
        }
        let id = nextTaskID
        nextTaskID += 1
        openTasks[id] = name
        emit(.backgroundTaskBegan(id: id))
    }

    private mutating func endBackgroundTask(_ id: UInt64) {
        guard openTasks.removeValue(forKey: id) != nil else { return reject("no open background task \(id)") }
        // With its last task ended, the app is suspended at once (settle does it).
    }

    private mutating func setKeepAlive(_ interval: Duration?) {
        guard let interval else {
            keepAliveInterval = nil
            return emit(.cancelTimer(.keepAlive))
        }
        guard interval >= timings.keepAliveMinimum else {
            return reject("keep-alive timeout \(interval.seconds) s is below the minimum of \(timings.keepAliveMinimum.seconds) s")
        }
        guard phase.isAlive else { return reject("not running") }
        keepAliveInterval = interval
        emit(.startTimer(.keepAlive, after: interval))
    }

    private mutating func terminateRequested() {
        guard phase.isAlive else { return reject("not running") }
        guard pendingTermination == nil else { return }
        if phase.isStopped {
            // Seed 002: a suspended app is not told; it is simply ended.
            return kill(TerminationReason(.terminated, "terminated while suspended (no willTerminate)"))
        }
        beginTermination(TerminationReason(.terminated, "terminate requested"))
    }

    private mutating func killRequested() {
        guard phase.isAlive else { return reject("not running") }
        kill(TerminationReason(.forceQuit, "force quit: SIGKILL without willTerminate"))
    }

    private mutating func memoryPressureKill() {
        guard phase.isAlive else { return reject("not running") }
        kill(TerminationReason(.memoryPressure, "terminated to free memory while \(state.rawValue)"))
    }

    private mutating func reclaimRequested() {
        guard phase == .suspended else { return reject("only a suspended app's sockets are reclaimed (state: \(state.rawValue))") }
        emit(.reclaimSockets(reason: "reclaim requested"))
    }

    private mutating func screenLocked() {
        locked = true
        if phase == .suspended { emit(.reclaimSockets(reason: "screen locked")) }
    }

    private mutating func heldSocketsChanged(_ count: Int) {
        heldSockets = count
        if !phase.isAlive { emit(relaunchesOnData ? .armSockets : .disarmSockets) }
    }

    private mutating func shutdown() {
        shuttingDown = true
        if phase.isStopped {
            emit(.resume)
            setPhase(.background, "voipd is stopping: resumed so that nothing is left stopped")
        }
        cancelAllTimers()
    }

    // MARK: - Timers

    private mutating func timerFired(_ timer: LifecycleTimer) {
        switch timer {
        case .acknowledgement:
            guard let event = inFlight, phase.isAlive else { return }
            let limit = timings.watchdog(for: event.kind)?.seconds ?? 0
            let watchdog = TerminationReason(.watchdog, "\(event.kind.rawValue) not acknowledged within \(limit) s")
            kill(event.kind == .willTerminate ? (pendingTermination ?? watchdog) : watchdog)
        case .connect:
            guard connection == .awaiting else { return }
            // It never connected: treat it as a program that does not speak the protocol.
            connection = .none
            expectsConnection = false
        case .wakeBudget:
            wakeUnhandled = false
            guard phase == .background, goal == .background, openTasks.isEmpty, pendingTermination == nil,
                  !policy.runsInBackground, !shuttingDown else { return }
            // The wake is over. A stopped app cannot acknowledge what it was sent: an event
            // left in flight or queued would hold back its next wake and its return to the
            // foreground.
            if inFlight != nil {
                inFlight = nil
                emit(.cancelTimer(.acknowledgement))
            }
            outbox.removeAll()
            suspendNow(reason: "wake budget of \(timings.wakeBudget.seconds) s spent")
        case .taskExpirationWarning:
            guard !openTasks.isEmpty, phase == .background, pendingTermination == nil else { return }
            enqueue(.backgroundTaskWillExpire, reason: "background-task budget ends in \(timings.expirationWarning.seconds) s")
        case .taskBudget:
            guard !openTasks.isEmpty, phase == .background else { return }
            let names = openTasks.values.sorted().joined(separator: ", ")
            kill(TerminationReason(.backgroundTaskExpired, "background tasks still open when the budget ran out: \(names)"))
        case .keepAlive:
            guard let interval = keepAliveInterval, phase.isAlive else { return }
            emit(.startTimer(.keepAlive, after: interval))
            guard pendingTermination == nil, goal == .background else { return }
            if phase.isStopped { wake(reason: "keep-alive") }
            enqueue(.keepAlive, reason: "keep-alive interval \(interval.seconds) s")
        case .relaunchThrottle:
            guard relaunchScheduled, !phase.isAlive else { return }
            relaunchScheduled = false
            emit(.launch(inBackground: true, reason: "relaunch after throttle"))
        case .reclaim:
            guard phase == .suspended else { return }
            emit(.reclaimSockets(reason: "suspended for \(timings.reclaimAfterSuspension?.seconds ?? 0) s"))
        case .exitGrace:
            guard phase.isAlive else { return }
            kill(pendingTermination ?? TerminationReason(.terminated, "did not exit in time"))
        }
    }

    // MARK: - Walking toward the goal

    /// Sends queued events, or takes the next step toward the goal, until the app must
    /// answer or there is nothing left to do.
    private mutating func settle() {
        for _ in 0..<64 {
            guard phase.isAlive else { return }
            if inFlight != nil { return }
            if !outbox.isEmpty {
                guard connection != .awaiting else { return }
                send(outbox.removeFirst())
                continue
            }
            guard pendingTermination == nil, !shuttingDown, let step = nextStep() else { return }
            step(&self)
        }
    }

    private func nextStep() -> ((inout AppLifecycle) -> Void)? {
        switch (phase, goal) {
        case (.active, .foreground) where interrupted:
            return { $0.announce(.willResignActive, phase: .inactive, reason: "interrupted") }
        case (.inactive, .foreground) where !interrupted:
            return { $0.announce(.didBecomeActive, phase: .active, reason: "back in the foreground") }
        case (.active, .background):
            return { $0.announce(.willResignActive, phase: .inactive, reason: "leaving the foreground") }
        case (.inactive, .background):
            return {
                $0.announce(.didEnterBackground, phase: .background, reason: "entered the background")
                $0.startTaskBudget($0.timings.backgroundTaskBudget)
            }
        case (.background, .foreground):
            return { $0.enterForeground() }
        case (.suspending, .foreground), (.suspended, .foreground):
            return {
                $0.emit(.resume)
                $0.enterForeground()
            }
        case (.background, .background) where openTasks.isEmpty && !wakeUnhandled && !policy.runsInBackground:
            return { $0.suspendNow(reason: "no background work left") }
        default:
            return nil
        }
    }

    private mutating func enterForeground() {
        emit(.disarmSockets)
        emit(.cancelTimer(.wakeBudget))
        emit(.cancelTimer(.taskExpirationWarning))
        emit(.cancelTimer(.taskBudget))
        emit(.cancelTimer(.reclaim))
        taskBudgetDeadline = nil
        wakeUnhandled = false
        announce(.willEnterForeground, phase: .inactive, reason: "entering the foreground")
    }

    private mutating func suspendNow(reason: String) {
        wakeUnhandled = false
        if policy.exitsOnSuspend {
            return beginTermination(TerminationReason(.exitsOnSuspend, "exits on suspend instead of being suspended"))
        }
        emit(.cancelTimer(.wakeBudget))
        emit(.cancelTimer(.taskExpirationWarning))
        emit(.cancelTimer(.taskBudget))
        taskBudgetDeadline = nil
        // Armed before the stop: data that arrives on the way to suspended still wakes it.
        emit(.armSockets)
        emit(.suspend)
        suspensionReason = reason
        setPhase(.suspending, reason)
    }

    /// Resumes a stopped app in the background for a wake.
    private mutating func wake(reason: String) {
        emit(.resume)
        emit(.disarmSockets)
        emit(.cancelTimer(.reclaim))
        emit(.startTimer(.wakeBudget, after: timings.wakeBudget))
        wakeUnhandled = true
        startTaskBudget(timings.resumedTaskBudget)
        setPhase(.background, reason)
    }

    private mutating func startTaskBudget(_ budget: Duration) {
        taskBudgetDeadline = now + budget
        emit(.startTimer(.taskExpirationWarning, after: max(budget - timings.expirationWarning, .zero)))
        emit(.startTimer(.taskBudget, after: budget))
    }

    private mutating func relaunchForData(_ readiness: SocketReadiness) {
        guard policy.canLaunch, policy.relaunchOnData, !endedByChoice else { return emit(.disarmSockets) }
        // One readiness report per socket is enough; the newest counts.
        outbox.removeAll { $0.kind == .voipSocketReadable && $0.socket?.name == readiness.name }
        enqueue(.voipSocketReadable, socket: readiness, reason: "data on \(readiness.name)")
        guard !relaunchScheduled else { return }
        let delay = relaunchDelay()
        if delay > .zero {
            relaunchScheduled = true
            emit(.disarmSockets)
            emit(.startTimer(.relaunchThrottle, after: delay))
        } else {
            emit(.launch(inBackground: true, reason: "data on \(readiness.name)"))
        }
    }

    /// How long until a relaunch may happen. A single quick death relaunches at once: an
    /// incoming call must not wait because the app crashed once. From the second quick
    /// death in a row, relaunches are at least `relaunchThrottle` apart (launchd's
    /// ThrottleInterval), the gap doubling with each further one up to the maximum.
    private func relaunchDelay() -> Duration {
        guard quickDeaths > 1, let launchedAt else { return .zero }
        var gap = timings.relaunchThrottle
        for _ in 2..<quickDeaths where gap < timings.relaunchThrottleMaximum { gap = gap * 2 }
        gap = min(gap, timings.relaunchThrottleMaximum)
        let earliest = launchedAt + gap
        return earliest > now ? earliest - now : .zero
    }

    private mutating func beginTermination(_ reason: TerminationReason) {
        pendingTermination = reason
        if connection == .none {
            emit(.requestExit)
            emit(.startTimer(.exitGrace, after: timings.terminationGrace))
            return
        }
        // willTerminate goes before anything else queued; an overall deadline covers an
        // app stuck on an earlier event.
        outbox.insert(makeEvent(.willTerminate, socket: nil, reason: reason.description), at: 0)
        emit(.startTimer(.exitGrace, after: timings.willTerminateWatchdog + timings.terminationGrace))
    }

    /// SIGKILL, once; the first kill's reason is the one recorded.
    private mutating func kill(_ reason: TerminationReason) {
        guard phase.isAlive, !killSent else { return }
        killSent = true
        pendingTermination = reason
        outbox.removeAll()
        emit(.kill(reason))
    }

    // MARK: - Events

    private mutating func makeEvent(_ kind: AppEventKind, socket: SocketReadiness?, reason: String) -> AppEvent {
        defer { nextEventID += 1 }
        return AppEvent(id: nextEventID, kind: kind, socket: socket, reason: reason)
    }

    private mutating func enqueue(_ kind: AppEventKind, socket: SocketReadiness? = nil, reason: String) {
        outbox.append(makeEvent(kind, socket: socket, reason: reason))
    }

    /// Sends the event that announces a state change, and changes the state.
    private mutating func announce(_ kind: AppEventKind, phase newPhase: LifecyclePhase, reason: String) {
        setPhase(newPhase, reason)
        send(makeEvent(kind, socket: nil, reason: reason))
    }

    private mutating func send(_ event: AppEvent) {
        if event.kind == .voipSocketReadable || event.kind == .keepAlive { wakeCount += 1 }
        guard connection == .connected else {
            // No one can acknowledge: the event counts as acknowledged at once.
            return acknowledgementArrived(event, delivered: false)
        }
        inFlight = event
        emit(.deliver(event))
        if let limit = timings.watchdog(for: event.kind) { emit(.startTimer(.acknowledgement, after: limit)) }
    }

    private mutating func acknowledgementArrived(_ event: AppEvent, delivered: Bool = true) {
        if delivered {
            inFlight = nil
            emit(.cancelTimer(.acknowledgement))
        }
        switch event.kind {
        case .willTerminate:
            kill(pendingTermination ?? TerminationReason(.terminated, "willTerminate acknowledged"))
        case .voipSocketReadable, .keepAlive:
            // Handled: what remains is for settle (suspend unless tasks are open). An app
            // that could not be told keeps the rest of its wake budget.
            guard delivered else { break }
            wakeUnhandled = false
            emit(.cancelTimer(.wakeBudget))
        default:
            break
        }
    }

    // MARK: - Plumbing

    private mutating func setPhase(_ newPhase: LifecyclePhase, _ reason: String) {
        let old = phase.state
        phase = newPhase
        if newPhase.state != old { emit(.transition(from: old, to: newPhase.state, reason: reason)) }
    }

    private mutating func cancelAllTimers() {
        for timer in LifecycleTimer.allCases where timer != .relaunchThrottle { emit(.cancelTimer(timer)) }
    }

    private mutating func emit(_ action: LifecycleAction) { actions.append(action) }

    private mutating func reject(_ reason: String) { emit(.rejected(reason)) }
}

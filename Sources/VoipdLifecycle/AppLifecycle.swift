import VoipdVocabulary

/// The lifecycle of one app: a pure state machine. ``handle(_:now:)`` takes an input and
/// returns the reply and the actions the daemon must perform, in order. It is the single
/// source of truth for an app's state; it performs no system calls and reads no clock
/// (`now` is given).
///
/// The machine walks toward its goal (foreground or background) one event at a time: at
/// most one event is in flight, the next is sent when the app acknowledges it, and the
/// state changes when the event that announces it is sent (UIKit's order:
/// willResignActive → inactive, didEnterBackground → background, willEnterForeground →
/// inactive, didBecomeActive → active). An app without a control connection cannot
/// acknowledge, so its events count as acknowledged at once.
///
/// What belongs to one phase is kept in that phase's case (``Stage``). The value is
/// `Codable` so that an in-place upgrade of the daemon carries every app over as is.
public struct AppLifecycle: Sendable, Codable {
    /// The durations; a configuration reload may change them (for timers started later).
    public var timings: LifecycleTimings
    /// Replaced by ``LifecycleInput/policyChanged(_:)``.
    public internal(set) var policy: AppPolicy

    var stage: Stage = .notRunning(Dormant())
    var history = History()
    /// The screen is locked: a suspended app's ordinary sockets are reclaimed.
    public internal(set) var locked: Bool
    /// How many VoIP sockets are held for the app.
    public internal(set) var heldSockets = 0
    /// Whether a launched process is expected to connect: what the policy says, until a
    /// process showed otherwise.
    var expectsConnection: Bool
    var nextEventID: UInt64 = 1
    var nextTaskID: UInt64 = 1

    /// `screenLocked`: the screen's state when the app becomes known (later changes come
    /// as inputs).
    public init(timings: LifecycleTimings = LifecycleTimings(), policy: AppPolicy = AppPolicy(), screenLocked: Bool = false) {
        self.timings = timings
        self.policy = policy
        self.expectsConnection = policy.speaksProtocol
        self.locked = screenLocked
    }

    /// Feeds one input; returns the reply and the actions to perform, in order.
    public mutating func handle(_ input: LifecycleInput, now: MonotonicInstant) -> LifecycleOutcome {
        var turn = Turn(now: now)
        apply(input, &turn)
        settle(&turn)
        return turn.outcome
    }

    /// Takes a new count of held sockets without an input when recording it is all
    /// `.heldSocketsChanged` would do: for a running app that is not stopped, whose steps
    /// the count does not enter into (it decides whether a dead app is relaunched by data,
    /// and whether a stopped one's new socket is watched), and whose state is settled after
    /// the last input. False: feed the input. A registration or release then costs the
    /// daemon no turn of the machine.
    public mutating func takeHeldSocketCountQuietly(_ count: Int) -> Bool {
        guard phase.isAlive, !phase.isStopped else { return false }
        heldSockets = count
        return true
    }

    /// Whether `.socketReady` would resume the app now: a question about the next input
    /// that changes nothing, so that the daemon can send the resume first on the wake path
    /// (the `.resume` in the answer to the input then finds the process already running).
    public var resumesOnSocketReady: Bool { phase.isStopped && pendingTermination == nil }

    /// Reads the value where it is stored: `record.lifecycle.inspect { $0.phase }`. A plain
    /// `record.lifecycle.phase` on a value stored in a class copies the whole value (retaining
    /// every reference in it) to call a getter of this module; through `inspect` the getter
    /// gets the stored value itself. For the wake path, where the records are cold in cache.
    @inlinable
    public mutating func inspect<Value>(_ body: (borrowing AppLifecycle) -> Value) -> Value { body(self) }

    // MARK: - The state, as the daemon and tests see it

    public var phase: LifecyclePhase {
        switch stage {
        case .notRunning: return .notRunning
        case .running(let running): return running.phase.phase
        case .terminated: return .terminated
        }
    }

    /// The public state.
    public var state: AppState { phase.state }

    /// Where the app wants to be (foreground when no process runs).
    public var goal: LifecycleGoal {
        guard case .running(let running) = stage, running.goal == .background else { return .foreground }
        return .background
    }

    public var interrupted: Bool {
        guard case .running(let running) = stage else { return false }
        return running.goal == .foreground(interrupted: true)
    }

    public var connection: ControlConnection {
        guard case .running(let running) = stage else { return .none }
        switch running.link {
        case .connected: return .connected
        case .awaiting: return .awaiting
        case .none: return .none
        }
    }

    /// The event sent and not yet acknowledged.
    public var inFlight: AppEvent? {
        guard case .running(let running) = stage else { return nil }
        return running.link.inFlight
    }

    /// Events waiting to be sent, in order (for a dead app: those its relaunch will get).
    public var outbox: [AppEvent] {
        switch stage {
        case .notRunning(let dormant), .terminated(let dormant, _): return dormant.outbox
        case .running(let running): return running.outbox
        }
    }

    /// Open background tasks by id, with their names.
    public var openTasks: [UInt64: String] {
        guard case .running(let running) = stage else { return [:] }
        return running.openTasks
    }

    /// When the background-task budget runs out (nil: no budget running).
    public var taskBudgetDeadline: MonotonicInstant? {
        guard case .running(let running) = stage, case .background(let deadline, _) = running.phase else { return nil }
        return deadline
    }

    public var keepAliveInterval: Duration? {
        guard case .running(let running) = stage else { return nil }
        return running.keepAliveInterval
    }

    /// The shortest keep-alive interval this app may ask for: its policy's, never below the
    /// floor, or the timings' default.
    public var keepAliveMinimum: Duration {
        policy.keepAliveMinimum.map { max($0, timings.keepAliveFloor) } ?? timings.keepAliveMinimum
    }

    /// Why the process is being ended (set when the kill or willTerminate is decided).
    public var pendingTermination: TerminationReason? {
        guard case .running(let running) = stage else { return nil }
        return running.ending?.reason
    }

    /// Why the process ended last.
    public var terminationReason: TerminationReason? { history.lastTermination }
    /// voipSocketReadable and keepAlive events delivered.
    public var wakeCount: Int { history.wakeCount }
    /// Times the process was started (first launch included).
    public var launchCount: Int { history.launchCount }
    /// Deaths in a row of a process that ran less than `relaunchThrottle`.
    public var quickDeaths: Int { history.quickDeaths }

    /// A relaunch waits for the throttle timer.
    public var relaunchScheduled: Bool {
        switch stage {
        case .notRunning(let dormant), .terminated(let dormant, _): return dormant.relaunchScheduled
        case .running: return false
        }
    }

    /// The app was ended on purpose: data does not bring it back until it is launched again.
    public var endedByChoice: Bool {
        guard case .terminated(_, let endedByChoice) = stage else { return false }
        return endedByChoice
    }

    // MARK: - Changing it in place

    /// The process's state; only while one runs (callers look at `phase` first).
    var running: Running {
        _read {
            guard case .running(let running) = stage else { preconditionFailure("no process is running") }
            yield running
        }
        _modify {
            // Moved out of the enum and back, never copied: a copy would share the fields'
            // box, and the change would then copy it.
            var taken = Stage.notRunning(Dormant())
            swap(&stage, &taken)
            guard case .running(var running) = consume taken else { preconditionFailure("no process is running") }
            defer { stage = .running(running) }
            yield &running
        }
    }

    /// The state of an app with no process; only while none runs.
    var dormant: Dormant {
        _read {
            switch stage {
            case .notRunning(let dormant), .terminated(let dormant, _): yield dormant
            case .running: preconditionFailure("a process is running")
            }
        }
        _modify {
            var taken = Stage.notRunning(Dormant())
            swap(&stage, &taken)
            switch consume taken {
            case .notRunning(var dormant):
                defer { stage = .notRunning(dormant) }
                yield &dormant
            case .terminated(var dormant, let endedByChoice):
                defer { stage = .terminated(dormant, endedByChoice: endedByChoice) }
                yield &dormant
            case .running:
                preconditionFailure("a process is running")
            }
        }
    }

    /// Moves to `stage`, recording the transition if the public state changes.
    mutating func enter(_ newStage: Stage, _ reason: String, _ turn: inout Turn) {
        let old = state
        stage = newStage
        if state != old { turn.emit(.transition(from: old, to: state, reason: reason)) }
    }

    /// Moves the running process to `newPhase`, recording the transition if the public
    /// state changes.
    mutating func enter(_ newPhase: RunningPhase, _ reason: String, _ turn: inout Turn) {
        let old = state
        running.phase = newPhase
        if newPhase.phase.state != old { turn.emit(.transition(from: old, to: newPhase.phase.state, reason: reason)) }
    }
}

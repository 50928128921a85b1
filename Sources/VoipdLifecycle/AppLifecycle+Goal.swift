import VoipdVocabulary

/// Walking toward the goal, and the events that announce each step.
extension AppLifecycle {
    /// One step toward the goal.
    private enum Step {
        case announce(AppEventKind, to: RunningPhase, reason: String)
        case enterBackground
        case enterForeground(resuming: Bool)
        case suspend
    }

    /// Sends queued events, or takes the next step toward the goal, until the app must
    /// answer or there is nothing left to do.
    mutating func settle(_ turn: inout Turn) {
        for _ in 0..<64 {
            guard phase.isAlive, inFlight == nil else { return }
            if !running.outbox.isEmpty {
                guard running.link != .awaiting else { return }
                send(running.outbox.removeFirst(), &turn)
                continue
            }
            // A launched app that has not said hello yet cannot be told: its steps wait for the
            // hello (or connectTimeout), lest it be stopped before it could register anything
            // (`launch` then `background` at once). A stopped one is resumed all the same.
            guard running.link != .awaiting || phase.isStopped else { return }
            guard pendingTermination == nil, !running.shuttingDown, let step = nextStep() else { return }
            take(step, &turn)
        }
    }

    private func nextStep() -> Step? {
        let running = self.running
        switch (running.phase, running.goal) {
        case (.active, .foreground(interrupted: true)):
            return .announce(.willResignActive, to: .inactive, reason: "interrupted")
        case (.inactive, .foreground(interrupted: false)):
            return .announce(.didBecomeActive, to: .active, reason: "back in the foreground")
        case (.active, .background):
            return .announce(.willResignActive, to: .inactive, reason: "leaving the foreground")
        case (.inactive, .background):
            return .enterBackground
        case (.background, .foreground):
            return .enterForeground(resuming: false)
        case (.suspending, .foreground), (.suspended, .foreground):
            return .enterForeground(resuming: true)
        case (.background(_, let wakeUnhandled), .background)
            where running.openTasks.isEmpty && !wakeUnhandled && !policy.runsInBackground && !policy.suspendsWhenQuiet
                && running.callStartedAt == nil:
            return .suspend
        default:
            return nil
        }
    }

    private mutating func take(_ step: Step, _ turn: inout Turn) {
        switch step {
        case .announce(let kind, let phase, let reason):
            announce(kind, phase: phase, reason: reason, &turn)
        case .enterBackground:
            // In a call no budget runs; it starts when the call ends.
            guard !audioSessionActive else {
                return announce(.didEnterBackground, phase: .background(taskBudgetDeadline: nil, wakeUnhandled: false),
                                reason: "entered the background in a call", &turn)
            }
            let budget = timings.backgroundTaskBudget
            announce(.didEnterBackground, phase: .background(taskBudgetDeadline: turn.now + budget, wakeUnhandled: false),
                     reason: "entered the background", &turn)
            startTaskBudgetTimers(budget, &turn)
        case .enterForeground(let resuming):
            if resuming { turn.emit(.resume) }
            enterForeground(&turn)
        case .suspend:
            suspendNow(reason: "no background work left", &turn)
        }
    }

    private mutating func enterForeground(_ turn: inout Turn) {
        turn.emit(.disarmSockets)
        turn.emit(.cancelTimer(.wakeBudget))
        turn.emit(.cancelTimer(.taskExpirationWarning))
        turn.emit(.cancelTimer(.taskBudget))
        turn.emit(.cancelTimer(.reclaim))
        turn.emit(.cancelTimer(.hibernate))
        announce(.willEnterForeground, phase: .inactive, reason: "entering the foreground", &turn)
    }

    mutating func suspendNow(reason: String, _ turn: inout Turn) {
        running.phase.wakeHandled()
        if policy.exitsOnSuspend {
            return beginTermination(TerminationReason(.exitsOnSuspend, "exits on suspend instead of being suspended"), &turn)
        }
        turn.emit(.cancelTimer(.wakeBudget))
        turn.emit(.cancelTimer(.taskExpirationWarning))
        turn.emit(.cancelTimer(.taskBudget))
        // Armed before the stop: data that arrives on the way to suspended still wakes it.
        turn.emit(.armSockets)
        turn.emit(.suspend)
        enter(.suspending(reason: reason), reason, &turn)
    }

    /// Resumes a stopped app in the background for a wake.
    mutating func wake(reason: String, _ turn: inout Turn) {
        turn.emit(.resume)
        turn.emit(.disarmSockets)
        turn.emit(.cancelTimer(.reclaim))
        turn.emit(.cancelTimer(.hibernate))
        turn.emit(.startTimer(.wakeBudget, after: timings.wakeBudget))
        // A process taken back suspended has not connected since (it could not): it may now.
        if running.link == .awaiting { turn.emit(.startTimer(.connect, after: timings.connectTimeout)) }
        let budget = timings.resumedTaskBudget
        startTaskBudgetTimers(budget, &turn)
        enter(.background(taskBudgetDeadline: turn.now + budget, wakeUnhandled: true), reason, &turn)
    }

    /// The timers of a background-task budget that starts now (its deadline is the phase's).
    mutating func startTaskBudgetTimers(_ budget: Duration, _ turn: inout Turn) {
        turn.emit(.startTimer(.taskExpirationWarning, after: max(budget - timings.expirationWarning, .zero)))
        turn.emit(.startTimer(.taskBudget, after: budget))
    }

    mutating func relaunchForData(_ readiness: SocketReadiness, _ turn: inout Turn) {
        guard policy.canLaunch, policy.relaunchOnData, !endedByChoice else { return turn.emit(.disarmSockets) }
        // One readiness report per socket is enough; the newest counts.
        dormant.outbox.removeAll { $0.kind == .voipSocketReadable && $0.socket?.name == readiness.name }
        enqueue(.voipSocketReadable, socket: readiness, reason: readiness.arrival)
        relaunchInBackground(reason: readiness.arrival, &turn)
    }

    /// Launches the dead app in the background for the events queued for it, at once or
    /// once the crash-loop throttle allows (unless a relaunch is scheduled already).
    mutating func relaunchInBackground(reason: String, _ turn: inout Turn) {
        guard !relaunchScheduled else { return }
        let delay = relaunchDelay(now: turn.now)
        if delay > .zero {
            dormant.relaunchScheduled = true
            turn.emit(.disarmSockets)
            turn.emit(.startTimer(.relaunchThrottle, after: delay))
        } else {
            turn.emit(.launch(inBackground: true, reason: reason))
        }
    }

    /// How long until a relaunch may happen. A single quick death relaunches at once: an
    /// incoming call must not wait because the app crashed once. From the second quick
    /// death in a row, relaunches are at least `relaunchThrottle` apart (launchd's
    /// ThrottleInterval), the gap doubling with each further one up to the maximum.
    private func relaunchDelay(now: MonotonicInstant) -> Duration {
        guard history.quickDeaths > 1, let launchedAt = history.lastLaunch else { return .zero }
        var gap = timings.relaunchThrottle
        for _ in 2..<history.quickDeaths where gap < timings.relaunchThrottleMaximum { gap = gap * 2 }
        gap = min(gap, timings.relaunchThrottleMaximum)
        let earliest = launchedAt + gap
        return earliest > now ? earliest - now : .zero
    }

    mutating func beginTermination(_ reason: TerminationReason, _ turn: inout Turn) {
        running.ending = .requested(reason)
        if running.link == .none {
            turn.emit(.requestExit)
            turn.emit(.startTimer(.exitGrace, after: timings.terminationGrace))
            return
        }
        // willTerminate goes before anything else queued; an overall deadline covers an
        // app stuck on an earlier event.
        let willTerminate = makeEvent(.willTerminate, socket: nil, reason: reason.description)
        running.outbox.insert(willTerminate, at: 0)
        turn.emit(.startTimer(.exitGrace, after: timings.willTerminateWatchdog + timings.terminationGrace))
    }

    /// SIGKILL, once; the first kill's reason is the one recorded.
    mutating func kill(_ reason: TerminationReason, _ turn: inout Turn) {
        guard phase.isAlive else { return }
        if case .killed = running.ending { return }
        running.ending = .killed(reason)
        running.outbox.removeAll()
        turn.emit(.kill(reason))
    }

    mutating func cancelAllTimers(_ turn: inout Turn) {
        for timer in LifecycleTimer.allCases where timer != .relaunchThrottle { turn.emit(.cancelTimer(timer)) }
    }

    // MARK: - Events

    private mutating func makeEvent(_ kind: AppEventKind, socket: SocketReadiness?, delivery: UInt64? = nil, reason: String) -> AppEvent {
        defer { nextEventID += 1 }
        return AppEvent(id: nextEventID, kind: kind, socket: socket, delivery: delivery, reason: reason)
    }

    /// Queues an event for the process, or for the next one when none runs.
    mutating func enqueue(_ kind: AppEventKind, socket: SocketReadiness? = nil, delivery: UInt64? = nil, reason: String) {
        let event = makeEvent(kind, socket: socket, delivery: delivery, reason: reason)
        if phase.isAlive { running.outbox.append(event) } else { dormant.outbox.append(event) }
    }

    /// Sends the event that announces a state change, and changes the state.
    private mutating func announce(_ kind: AppEventKind, phase newPhase: RunningPhase, reason: String, _ turn: inout Turn) {
        enter(newPhase, reason, &turn)
        send(makeEvent(kind, socket: nil, reason: reason), &turn)
    }

    private mutating func send(_ event: AppEvent, _ turn: inout Turn) {
        if event.kind == .voipSocketReadable || event.kind == .keepAlive { history.wakeCount += 1 }
        // Before the event goes: what arrives from now on wakes the app after its next stop,
        // even if it reads it before the stop takes hold (it may be half-handled). An app that
        // cannot be told is marked too: for it, this is the moment its state changes. Except
        // a program measured quiet before every stop (adopted): the mark it gets then covers
        // all this one would, and on a wake this one would cost voipd's loop (a listener's
        // mark reads a socket table) while the woken program needs the CPU.
        let connected = if case .connected = running.link { true } else { false }
        // What the event says of its socket is known to the app from now on (an app that
        // cannot be told is resumed for it). Only here: a readiness the lifecycle passed over
        // (the app already runs) was never told, and stays new for the next stop.
        if let socket = event.socket { turn.emit(.markReported(socket)) }
        if connected || !policy.suspendsWhenQuiet { turn.emit(.markSockets) }
        guard connected else {
            // No one can acknowledge: the event counts as acknowledged at once.
            return acknowledgementArrived(event, delivered: false, &turn)
        }
        running.link = .connected(inFlight: event)
        turn.emit(.deliver(event))
        if let limit = timings.watchdog(for: event.kind) { turn.emit(.startTimer(.acknowledgement, after: limit)) }
    }

    mutating func acknowledgementArrived(_ event: AppEvent, delivered: Bool = true, _ turn: inout Turn) {
        if delivered {
            running.link = .connected(inFlight: nil)
            turn.emit(.cancelTimer(.acknowledgement))
        }
        switch event.kind {
        case .willTerminate:
            kill(pendingTermination ?? TerminationReason(.terminated, "willTerminate acknowledged"), &turn)
        case .voipSocketReadable, .keepAlive, .backgroundTransferEvents:
            // Handled: what remains is for settle (suspend unless tasks are open). An app
            // that could not be told keeps the rest of its wake budget.
            guard delivered else { break }
            running.phase.wakeHandled()
            turn.emit(.cancelTimer(.wakeBudget))
        default:
            break
        }
    }
}

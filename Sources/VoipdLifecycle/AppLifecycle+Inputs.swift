import VoipdVocabulary

/// What each input does.
extension AppLifecycle {
    mutating func apply(_ input: LifecycleInput, _ turn: inout Turn) {
        switch input {
        case .launched(let inBackground, let reason): launched(inBackground: inBackground, reason: reason, &turn)
        case .launchFailed(let message): launchFailed(message, &turn)
        case .takenBackSuspended(let reason, let keepAlive): takenBackSuspended(reason: reason, keepAlive: keepAlive, &turn)
        case .connected: connected(&turn)
        case .disconnected: disconnected(&turn)
        case .foregroundRequested: foregroundRequested(&turn)
        case .backgroundRequested: backgroundRequested(&turn)
        case .interruptionBegan: interruptionBegan(&turn)
        case .interruptionEnded: interruptionEnded(&turn)
        case .acknowledged(let id): acknowledged(id, &turn)
        case .stopConfirmed: stopConfirmed(&turn)
        case .stopFailed(let message): stopFailed(message, &turn)
        case .resumeFailed(let message): resumeFailed(message, &turn)
        case .socketReady(let readiness): socketReady(readiness, &turn)
        case .transferEventsReady(let delivery): transferEventsReady(delivery, &turn)
        case .processExited(let end): processExited(end, &turn)
        case .beginBackgroundTask(let name): beginBackgroundTask(name, &turn)
        case .endBackgroundTask(let id): endBackgroundTask(id, &turn)
        case .setKeepAlive(let interval): setKeepAlive(interval, &turn)
        case .setAudioSessionActive(let active): setAudioSessionActive(active, &turn)
        case .timerFired(let timer): timerFired(timer, &turn)
        case .terminateRequested: terminateRequested(&turn)
        case .killRequested: killRequested(&turn)
        case .memoryPressureKill: memoryPressureKill(&turn)
        case .reclaimRequested: reclaimRequested(&turn)
        case .hibernateRequested: hibernateRequested(&turn)
        case .screenLocked: screenLocked(&turn)
        case .screenUnlocked: locked = false
        case .heldSocketsChanged(let count): heldSocketsChanged(count, &turn)
        case .quietMeasured: quietMeasured(&turn)
        case .policyChanged(let policy): policyChanged(policy, &turn)
        case .shutdown: shutdown(&turn)
        }
    }

    private mutating func launched(inBackground: Bool, reason: String, _ turn: inout Turn) {
        guard !phase.isAlive else { return turn.reject("already running") }
        cancelAllTimers(&turn)
        // Events waiting for this process (the data that asked for the relaunch) go to it.
        let outbox = dormant.outbox
        history.lastLaunch = turn.now
        history.launchCount += 1
        let link: Link = expectsConnection ? .awaiting : .none
        if link == .awaiting { turn.emit(.startTimer(.connect, after: timings.connectTimeout)) }
        turn.emit(.disarmSockets)
        // A relaunch in the background is a wake: its budgets are those of a resume.
        let phase: RunningPhase = inBackground
            ? .background(taskBudgetDeadline: turn.now + timings.resumedTaskBudget, wakeUnhandled: true) : .active
        let goal: Goal = inBackground ? .background : .foreground(interrupted: false)
        enter(.running(Running(phase: phase, goal: goal, link: link, outbox: outbox)), reason, &turn)
        if inBackground {
            startTaskBudgetTimers(timings.resumedTaskBudget, &turn)
            turn.emit(.startTimer(.wakeBudget, after: timings.wakeBudget))
        }
    }

    /// Suspended as it was found: its sockets armed, the timers of a suspension started; not
    /// a launch (no launch is counted). A process that speaks the protocol is expected to
    /// connect once woken (``wake(reason:_:)`` starts the wait for it). Its recorded
    /// keep-alive goes on, due when it was (at once if that passed while no voipd ran), at
    /// least the minimum this voipd allows.
    private mutating func takenBackSuspended(reason: String, keepAlive: RecordedKeepAlive?, _ turn: inout Turn) {
        guard !phase.isAlive else { return turn.reject("already running") }
        // Events wait for it (a transfer's results): it is resumed to take them, not kept stopped.
        guard dormant.outbox.isEmpty else { return turn.reject("events wait for it") }
        cancelAllTimers(&turn)
        let outbox = dormant.outbox
        let link: Link = expectsConnection ? .awaiting : .none
        enter(.running(Running(phase: .suspended, goal: .background, link: link, outbox: outbox)), reason, &turn)
        turn.emit(.armSockets)
        startSuspensionTimers(&turn)
        if let keepAlive, keepAlive.interval > .zero {
            let interval = max(keepAlive.interval, keepAliveMinimum)
            running.keepAliveInterval = interval
            turn.emit(.startTimer(.keepAlive, after: keepAlive.firstDelay(at: turn.now, interval: interval)))
        }
    }

    private mutating func launchFailed(_ message: String, _ turn: inout Turn) {
        // The process that runs is not the one that failed to start.
        guard !phase.isAlive else { return turn.reject("already running") }
        let reason = TerminationReason(.launchFailed, message)
        history.lastTermination = reason
        enter(.terminated(Dormant(), endedByChoice: endedByChoice), reason.description, &turn)
    }

    private mutating func connected(_ turn: inout Turn) {
        guard phase.isAlive else { return }
        expectsConnection = true
        if running.link.inFlight == nil { running.link = .connected(inFlight: nil) }
        turn.emit(.cancelTimer(.connect))
    }

    private mutating func disconnected(_ turn: inout Turn) {
        guard phase.isAlive, running.link != .none else { return }
        let inFlight = running.link.inFlight
        running.link = .none
        turn.emit(.cancelTimer(.connect))
        // Nobody is left to acknowledge what was sent: it counts as acknowledged, but like an
        // event that could not be delivered, it leaves a wake its whole budget.
        if let inFlight {
            turn.emit(.cancelTimer(.acknowledgement))
            acknowledgementArrived(inFlight, delivered: false, &turn)
        }
    }

    private mutating func foregroundRequested(_ turn: inout Turn) {
        guard phase.isAlive else {
            guard policy.canLaunch else { return turn.reject("not running, and voipd does not know how to launch it") }
            return turn.emit(.launch(inBackground: false, reason: "foreground requested"))
        }
        guard pendingTermination == nil else { return turn.reject("terminating") }
        if running.goal == .background { running.goal = .foreground(interrupted: false) }
    }

    private mutating func backgroundRequested(_ turn: inout Turn) {
        guard phase.isAlive else { return turn.reject("not running") }
        guard pendingTermination == nil else { return turn.reject("terminating") }
        running.goal = .background
    }

    private mutating func interruptionBegan(_ turn: inout Turn) {
        guard phase == .active || phase == .inactive, running.goal != .background else {
            return turn.reject("only an app in the foreground can be interrupted (state: \(state.rawValue))")
        }
        guard !interrupted else { return turn.reject("already interrupted") }
        running.goal = .foreground(interrupted: true)
    }

    private mutating func interruptionEnded(_ turn: inout Turn) {
        guard interrupted else { return turn.reject("not interrupted") }
        running.goal = .foreground(interrupted: false)
    }

    private mutating func acknowledged(_ id: UInt64, _ turn: inout Turn) {
        guard let event = inFlight, event.id == id else { return }
        acknowledgementArrived(event, &turn)
    }

    private mutating func stopConfirmed(_ turn: inout Turn) {
        guard case .running(let process) = stage, case .suspending(let reason) = process.phase else { return }
        // What the app read between the stop's decision and the stop is seen only now.
        turn.emit(.armSockets)
        enter(.suspended, reason, &turn)
        startSuspensionTimers(&turn)
    }

    /// The app could not be stopped, and runs on: waiting for a stop that will never come (or,
    /// suspended, found running after someone else's `SIGCONT` and not stopped again), it
    /// would run in the background unchecked for ever, its sockets watched as if it were
    /// stopped. It is continued (a freezer may have frozen part of it) and ended as an app
    /// that exits on suspend is: told willTerminate if it can be told, then killed.
    private mutating func stopFailed(_ message: String, _ turn: inout Turn) {
        guard phase.isStopped, pendingTermination == nil else { return }
        let reason = "could not be suspended: \(message)"
        turn.emit(.resume)
        turn.emit(.disarmSockets)
        enter(.background(taskBudgetDeadline: nil, wakeUnhandled: false), reason, &turn)
        beginTermination(TerminationReason(.suspendFailed, reason), &turn)
    }

    /// The app could not be continued: stopped or frozen still, it would handle nothing while
    /// its record says it runs (a call it was woken for would ring nowhere), and nothing
    /// would ever stop the record saying so. It is killed (SIGKILL ends a stopped process,
    /// and a frozen one under cgroup v2), as one whose suspension failed: not by choice,
    /// so its held sockets stay and data relaunches it.
    private mutating func resumeFailed(_ message: String, _ turn: inout Turn) {
        guard phase.isAlive else { return }
        kill(TerminationReason(.suspendFailed, "could not be resumed: \(message)"), &turn)
    }

    /// What a suspension starts: the reclaim of a locked screen, and the timers of the reclaim
    /// and hibernation that a long suspension brings.
    private mutating func startSuspensionTimers(_ turn: inout Turn) {
        if locked { turn.emit(.reclaimSockets(reason: "screen locked")) }
        if let after = timings.reclaimAfterSuspension { turn.emit(.startTimer(.reclaim, after: after)) }
        if let after = timings.hibernateAfterSuspension { turn.emit(.startTimer(.hibernate, after: after)) }
    }

    private mutating func socketReady(_ readiness: SocketReadiness, _ turn: inout Turn) {
        switch phase {
        case .suspending, .suspended:
            guard pendingTermination == nil else { return }
            wake(reason: "voip socket \(readiness.name) readable", &turn)
            enqueue(.voipSocketReadable, socket: readiness, reason: readiness.arrival)
        case .notRunning, .terminated:
            relaunchForData(readiness, &turn)
        case .active, .inactive, .background:
            // The app runs and reads its own sockets; a late report is stale.
            break
        }
    }

    private mutating func transferEventsReady(_ delivery: UInt64, _ turn: inout Turn) {
        let reason = "background transfer events"
        switch phase {
        case .suspending, .suspended:
            guard pendingTermination == nil else { return turn.reject("terminating") }
            wake(reason: reason, &turn)
            enqueue(.backgroundTransferEvents, delivery: delivery, reason: reason)
        case .active, .inactive, .background:
            guard pendingTermination == nil else { return turn.reject("terminating") }
            enqueue(.backgroundTransferEvents, delivery: delivery, reason: reason)
        case .notRunning, .terminated:
            // iOS relaunches an app for its transfers unless the user force-quit it.
            guard policy.canLaunch else { return turn.reject("not running, and voipd does not know how to launch it") }
            guard history.lastTermination?.code != .forceQuit else { return turn.reject("force-quit: not relaunched for its transfers") }
            enqueue(.backgroundTransferEvents, delivery: delivery, reason: reason)
            relaunchInBackground(reason: reason, &turn)
        }
    }

    private mutating func processExited(_ end: ProcessEnd, _ turn: inout Turn) {
        guard phase.isAlive else { return }
        cancelAllTimers(&turn)
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
        if let launchedAt = history.lastLaunch, turn.now - launchedAt < timings.relaunchThrottle {
            history.quickDeaths += 1
        } else {
            history.quickDeaths = 0
        }
        history.lastTermination = reason
        let endedByChoice = [.forceQuit, .terminated, .exitsOnSuspend].contains(reason.code)
        enter(.terminated(Dormant(), endedByChoice: endedByChoice), reason.description, &turn)
        // Held sockets outlive the process; watch them so data can bring it back.
        turn.emit(relaunchesOnData ? .armSockets : .disarmSockets)
    }

    /// Whether data on a held socket would relaunch the app now that it is not running.
    private var relaunchesOnData: Bool {
        heldSockets > 0 && policy.canLaunch && policy.relaunchOnData && !endedByChoice && !relaunchScheduled
    }

    private mutating func beginBackgroundTask(_ name: String, _ turn: inout Turn) {
        guard phase.isAlive, pendingTermination == nil else { return turn.reply(.backgroundTaskBegan(id: 0)) }
        // In the foreground or in a call a task costs nothing; in the background it needs
        // budget left.
        if phase != .active && phase != .inactive && !audioSessionActive {
            // Once the stop is decided the budget is gone: a request sent just before it took
            // hold is refused, and the app handles that as iOS apps handled an invalid task.
            guard let deadline = taskBudgetDeadline, turn.now < deadline else { return turn.reply(.backgroundTaskBegan(id: 0)) }
        }
        let id = nextTaskID
        nextTaskID += 1
        running.openTasks[id] = name
        turn.reply(.backgroundTaskBegan(id: id))
    }

    private mutating func endBackgroundTask(_ id: UInt64, _ turn: inout Turn) {
        guard phase.isAlive, running.openTasks.removeValue(forKey: id) != nil else {
            return turn.reject("no open background task \(id)")
        }
        // With its last task ended, the app is suspended at once (settle does it). The app
        // waits for this request's reply, which goes after the stop: what it read before
        // asking, it has handled, and only what arrives from now on can be half-handled.
        turn.emit(.markSockets)
    }

    private mutating func setKeepAlive(_ interval: Duration?, _ turn: inout Turn) {
        guard let interval else {
            if phase.isAlive { running.keepAliveInterval = nil }
            return turn.emit(.cancelTimer(.keepAlive))
        }
        // A zero period would fire again in every turn of the daemon's loop, whatever
        // keepAliveMinimum allows (found by Tests/Fuzz).
        guard interval > .zero else { return turn.reject("keep-alive timeout must be more than 0 s") }
        guard interval >= keepAliveMinimum else {
            return turn.reject("keep-alive timeout \(interval.seconds) s is below the minimum of \(keepAliveMinimum.seconds) s")
        }
        guard phase.isAlive else { return turn.reject("not running") }
        running.keepAliveInterval = interval
        turn.emit(.startTimer(.keepAlive, after: interval))
    }

    private mutating func terminateRequested(_ turn: inout Turn) {
        guard phase.isAlive else { return turn.reject("not running") }
        guard pendingTermination == nil else { return }
        if phase.isStopped {
            // Seed 002: a suspended app is not told; it is simply ended.
            return kill(TerminationReason(.terminated, "terminated while suspended (no willTerminate)"), &turn)
        }
        beginTermination(TerminationReason(.terminated, "terminate requested"), &turn)
    }

    private mutating func killRequested(_ turn: inout Turn) {
        guard phase.isAlive else { return turn.reject("not running") }
        kill(TerminationReason(.forceQuit, "force quit: SIGKILL without willTerminate"), &turn)
    }

    private mutating func memoryPressureKill(_ turn: inout Turn) {
        guard phase.isAlive else { return turn.reject("not running") }
        kill(TerminationReason(.memoryPressure, "terminated to free memory while \(state.rawValue)"), &turn)
    }

    private mutating func reclaimRequested(_ turn: inout Turn) {
        guard phase == .suspended else { return turn.reject("only a suspended app's sockets are reclaimed (state: \(state.rawValue))") }
        turn.emit(.reclaimSockets(reason: "reclaim requested"))
    }

    /// Like reclaim, only a stopped app the kernel has confirmed: paging out a process that
    /// still runs would only have it fault its pages straight back in.
    private mutating func hibernateRequested(_ turn: inout Turn) {
        guard phase == .suspended else { return turn.reject("only a suspended app is hibernated (state: \(state.rawValue))") }
        guard pendingTermination == nil else { return turn.reject("terminating") }
        turn.emit(.hibernate(requested: true, reason: "hibernate requested"))
    }

    private mutating func screenLocked(_ turn: inout Turn) {
        locked = true
        if phase == .suspended { turn.emit(.reclaimSockets(reason: "screen locked")) }
    }

    private mutating func heldSocketsChanged(_ count: Int, _ turn: inout Turn) {
        let added = count > heldSockets
        heldSockets = count
        if !phase.isAlive { return turn.emit(relaunchesOnData ? .armSockets : .disarmSockets) }
        // A stopped app's sockets are all watched, one registered as the stop took hold too:
        // the app sent the request just before, and voipd read it only after it confirmed
        // the stop (a freeze is often confirmed in the same turn as it is asked for).
        if added && phase.isStopped { turn.emit(.armSockets) }
    }

    private mutating func quietMeasured(_ turn: inout Turn) {
        guard policy.suspendsWhenQuiet, mayEndWake else { return }
        running.phase.wakeHandled()
        // Quiet, with nothing unread: it has handled what arrived before now. Only what
        // arrives from now on may be half-handled when the stop takes hold, and wakes it.
        turn.emit(.markSockets)
        endWake(reason: "quiet", &turn)
    }

    /// The settling that follows applies the new policy: an app that may no longer run in
    /// the background is suspended now, not at whatever input comes next (found by
    /// Tests/Fuzz: a refused request suspended it).
    private mutating func policyChanged(_ new: AppPolicy, _ turn: inout Turn) {
        // A changed policy says anew whether launched processes are expected to connect.
        if new.speaksProtocol != policy.speaksProtocol { expectsConnection = new.speaksProtocol }
        policy = new
        if !new.allowsCalls && phase.isAlive { endCall(&turn) }
        // A keep-alive set below the minimum the app has now is raised to it (as a request
        // below it is refused), its period counted from now.
        if phase.isAlive, let interval = running.keepAliveInterval, interval < keepAliveMinimum {
            running.keepAliveInterval = keepAliveMinimum
            turn.emit(.startTimer(.keepAlive, after: keepAliveMinimum))
        }
    }

    private mutating func shutdown(_ turn: inout Turn) {
        if phase.isAlive {
            running.shuttingDown = true
            if phase.isStopped {
                turn.emit(.resume)
                enter(.background(taskBudgetDeadline: nil, wakeUnhandled: false), "voipd is stopping: resumed so that nothing is left stopped", &turn)
            }
        }
        cancelAllTimers(&turn)
    }

    // MARK: - Timers

    private mutating func timerFired(_ timer: LifecycleTimer, _ turn: inout Turn) {
        switch timer {
        case .acknowledgement:
            guard let event = inFlight else { return }
            let limit = timings.watchdog(for: event.kind)?.seconds ?? 0
            let watchdog = TerminationReason(.watchdog, "\(event.kind.rawValue) not acknowledged within \(limit) s")
            kill(event.kind == .willTerminate ? (pendingTermination ?? watchdog) : watchdog, &turn)
        case .connect:
            guard phase.isAlive, running.link == .awaiting else { return }
            // It never connected: treat it as a program that does not speak the protocol.
            running.link = .none
            expectsConnection = false
        case .wakeBudget:
            guard phase.isAlive, !audioSessionActive else { return }
            running.phase.wakeHandled()
            // A program that cannot say it has finished runs until it is measured quiet.
            guard mayEndWake, !policy.suspendsWhenQuiet else { return }
            endWake(reason: "wake budget of \(timings.wakeBudget.seconds) s spent", &turn)
        case .taskExpirationWarning:
            guard !openTasks.isEmpty, phase == .background, pendingTermination == nil, !audioSessionActive else { return }
            enqueue(.backgroundTaskWillExpire, reason: "background-task budget ends in \(timings.expirationWarning.seconds) s")
        case .taskBudget:
            guard !openTasks.isEmpty, phase == .background, !audioSessionActive else { return }
            let names = openTasks.values.sorted().joined(separator: ", ")
            kill(TerminationReason(.backgroundTaskExpired, "background tasks still open when the budget ran out: \(names)"), &turn)
        case .keepAlive:
            guard let interval = keepAliveInterval else { return }
            turn.emit(.startTimer(.keepAlive, after: interval))
            guard pendingTermination == nil, goal == .background else { return }
            // One keep-alive waiting is enough: an app slow to answer would otherwise be owed
            // one per interval, queued without bound (found by Tests/Fuzz).
            guard inFlight?.kind != .keepAlive, !running.outbox.contains(where: { $0.kind == .keepAlive }) else { return }
            if phase.isStopped { wake(reason: "keep-alive", &turn) }
            enqueue(.keepAlive, reason: "keep-alive interval \(interval.seconds) s")
        case .callLimit:
            guard phase.isAlive else { return }
            endCall(&turn)
        case .relaunchThrottle:
            guard relaunchScheduled else { return }
            dormant.relaunchScheduled = false
            turn.emit(.launch(inBackground: true, reason: "relaunch after throttle"))
        case .reclaim:
            guard phase == .suspended else { return }
            turn.emit(.reclaimSockets(reason: "suspended for \(timings.reclaimAfterSuspension?.seconds ?? 0) s"))
        case .hibernate:
            guard phase == .suspended, pendingTermination == nil else { return }
            turn.emit(.hibernate(requested: false, reason: "suspended for \(timings.hibernateAfterSuspension?.seconds ?? 0) s"))
        case .exitGrace:
            guard phase.isAlive else { return }
            kill(pendingTermination ?? TerminationReason(.terminated, "did not exit in time"), &turn)
        }
    }

    /// Whether nothing but a wake keeps the app running in the background.
    private var mayEndWake: Bool {
        phase == .background && goal == .background && openTasks.isEmpty && pendingTermination == nil
            && !policy.runsInBackground && !running.shuttingDown
    }

    /// The wake is over: the app is suspended. A stopped app cannot acknowledge what it was
    /// sent: an event left in flight or queued would hold back its next wake and its return
    /// to the foreground. An app that exits on suspend is not stopped and still can:
    /// willTerminate waits behind the event in flight, under the termination's overall
    /// deadline, rather than be sent while another is unanswered (found by Tests/Fuzz).
    private mutating func endWake(reason: String, _ turn: inout Turn) {
        if !policy.exitsOnSuspend {
            if inFlight != nil {
                running.link = .connected(inFlight: nil)
                turn.emit(.cancelTimer(.acknowledgement))
            }
            running.outbox.removeAll()
        }
        suspendNow(reason: reason, &turn)
    }
}

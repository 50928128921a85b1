import VoipdVocabulary

/// The "in a call" state: an active audio session (AVAudioSession's `setActive`). While it
/// lasts, an app in the background is not suspended and no budget runs out: neither the wake
/// budget, nor the background-task budget. When it ends, the background rules apply again as
/// after a wake: the app is suspended at once unless tasks are open, and open tasks get the
/// budget of a resumed app. iOS kept a VoIP app running while its audio session was active,
/// and suspended it again when the call ended.
extension AppLifecycle {
    /// Whether the app is in a call (its audio session is active).
    public var audioSessionActive: Bool { callStartedAt != nil }

    /// When the current call began (nil: not in a call).
    public var callStartedAt: MonotonicInstant? {
        guard case .running(let running) = stage else { return nil }
        return running.callStartedAt
    }

    mutating func setAudioSessionActive(_ active: Bool, _ turn: inout Turn) {
        guard phase.isAlive else { return turn.reject("not running") }
        guard active else {
            guard audioSessionActive else { return }
            // The app waits for this reply, which goes after a stop: what it read before
            // asking, it has handled.
            turn.emit(.markSockets)
            return endCall(&turn)
        }
        guard pendingTermination == nil else { return turn.reject("terminating") }
        guard policy.allowsCalls else { return turn.reject("its policy does not allow calls in the background") }
        guard !audioSessionActive else { return }
        running.callStartedAt = turn.now
        if let limit = timings.maximumCallDuration { turn.emit(.startTimer(.callLimit, after: limit)) }
        if phase.isStopped {
            // Asked just before a stop took hold: the app believes it is in a call, and it is.
            turn.emit(.resume)
            turn.emit(.disarmSockets)
            turn.emit(.cancelTimer(.reclaim))
            return enter(.background(taskBudgetDeadline: nil, wakeUnhandled: false), "audio session active (in a call)", &turn)
        }
        if case .background(_, let wakeUnhandled) = running.phase {
            pauseBudgets(&turn)
            running.phase = .background(taskBudgetDeadline: nil, wakeUnhandled: wakeUnhandled)
        }
    }

    /// The call is over (the app said so, its policy no longer allows it, or it lasted the
    /// maximum): in the background, the app is treated as just woken, without the event.
    mutating func endCall(_ turn: inout Turn) {
        guard audioSessionActive else { return }
        running.callStartedAt = nil
        turn.emit(.cancelTimer(.callLimit))
        guard case .background(_, let wakeUnhandled) = running.phase else { return }
        let budget = timings.resumedTaskBudget
        running.phase = .background(taskBudgetDeadline: turn.now + budget, wakeUnhandled: wakeUnhandled)
        if !openTasks.isEmpty { startTaskBudgetTimers(budget, &turn) }
        // An event still unacknowledged gets the wake budget it did not use.
        if wakeUnhandled { turn.emit(.startTimer(.wakeBudget, after: timings.wakeBudget)) }
        // Settle suspends the app now unless it has something left to do.
    }

    /// Entering the background or being in a call while there: no budget runs.
    mutating func pauseBudgets(_ turn: inout Turn) {
        turn.emit(.cancelTimer(.wakeBudget))
        turn.emit(.cancelTimer(.taskExpirationWarning))
        turn.emit(.cancelTimer(.taskBudget))
    }
}

import VoipdLifecycle

/// The wake path's hand-off: SIGCONT first, then the CPU to the app, then the bookkeeping.
extension Daemon {
    /// Feeds a wake (data on a held socket) like ``feed(_:_:)``, with one difference: the
    /// lifecycle decides as always and its first action, the resume, is performed at once,
    /// but the rest (the event for the app, the transition, the timers) waits until voipd
    /// has been back in epoll_wait. On a CPU that voipd and the app share, the app runs and
    /// reads its socket first; the app's SIGCHLD (CLD_CONTINUED) as it runs again is what
    /// brings voipd back. Only for voipd's own children, which send that SIGCHLD.
    func feedWake(_ app: AppRecord, _ input: LifecycleInput) {
        finishPendingWake()
        let actions = app.lifecycle.handle(input, now: now)
        log.debug("\(app.name): \(input) → \(actions)")
        perform(actions[...], for: app, handingOff: app.process?.isChild ?? false)
        drainDeferredInputs()
    }

    /// Performs what a wake left for later, and what that raises.
    func finishPendingWake() {
        guard let (app, rest) = pendingWake else { return }
        pendingWake = nil
        perform(rest, for: app)
        drainDeferredInputs()
    }
}

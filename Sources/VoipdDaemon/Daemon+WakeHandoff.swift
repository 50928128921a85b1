import VoipdLifecycle

extension Daemon {
    func feedWake(_ app: AppRecord, _ input: LifecycleInput) {
        finishPendingWake()
        let handOff = XHANDOFF != nil && app.lifecycle.phase == .suspended && (app.process?.isChild ?? false)
        let actions = app.lifecycle.handle(input, now: now)
        perform(actions[...], for: app, handingOff: handOff)
        drainDeferredInputs()
    }

    func finishPendingWake() {
        guard let (app, rest) = pendingWake else { return }
        pendingWake = nil
        perform(rest, for: app)
        drainDeferredInputs()
    }
}

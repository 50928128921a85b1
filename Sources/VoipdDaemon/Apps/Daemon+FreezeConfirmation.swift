import VoipdSystem
import VoipdVocabulary

/// Confirming a freeze without blocking the loop and without looking forever
/// (``FreezeConfirmation``): read at once (``Daemon/checkStop(_:)``), then a few timed
/// re-reads for a task that was running, and under cgroup v2, once they are over, the kernel's
/// own word: `EPOLLPRI` on the cgroup's `cgroup.events`. cgroup v1 notifies nothing: its
/// re-reads go on, every 100 ms at most, until the freeze is done or the lifecycle stops
/// waiting for it.
extension Daemon {
    /// The freeze of `process` is not done yet: schedule the next look, and under v2, once the
    /// timed re-reads are over, listen for the kernel's notification.
    ///
    /// The notification is registered only then, not with the first re-read: kernfs raises it
    /// at every change, thaws included (so voipd's own wakes must not be registered), and the
    /// kernel sends at most one per 10 ms per file, so the freeze that follows a wake's thaw
    /// is notified ~10 ms late, after the re-reads that confirm it in the common case. Armed
    /// from the first re-read it cost two `epoll_ctl` per suspension (add, then delete at the
    /// confirmation) for nothing. The read just done cleared any earlier notification, so a
    /// freeze completed since is reported as soon as the registration is made.
    func awaitFreeze(of app: AppRecord, _ process: AppProcess) {
        guard let box = process.cgroup else { return }
        var schedule = process.freezeConfirmation ?? FreezeConfirmation(version: box.cgroup.version)
        if let delay = schedule.nextDelay() {
            timers.set(.stopCheck(app.id), deadline: now + delay)
        } else if schedule.watchesNotification && process.freezeWatch == nil {
            do {
                process.freezeWatch = try loop.register(box.cgroup.stateFile, .priority, .cgroupEvents(app.id))
                log.debug("\(app.name): freeze not done after \(schedule.rereads) looks; waiting for the kernel's notification")
            } catch {
                // Without the notification the re-reads go on, as under v1.
                log.warning("\(app.name): cannot watch \(box.cgroup.path)/cgroup.events: \(error); looking again every 100 ms at most")
                schedule = FreezeConfirmation(version: .v1)
                if let delay = schedule.nextDelay() { timers.set(.stopCheck(app.id), deadline: now + delay) }
            }
        }
        process.freezeConfirmation = schedule
    }

    /// The freeze is confirmed, or no longer awaited (a wake came first, the process ended).
    func stopAwaitingFreeze(of process: AppProcess) {
        process.freezeConfirmation = nil
        guard let token = process.freezeWatch else { return }
        process.freezeWatch = nil
        if let box = process.cgroup { loop.deregister(box.cgroup.stateFile, token: token) }
    }

    /// The kernel says an app's cgroup changed (frozen, thawed or emptied): look if the
    /// awaited freeze is done. The read clears the notification (the registration is
    /// level-triggered: one not read would be reported again and again).
    func cgroupEvent(_ app: AppRecord) {
        guard let process = app.process else { return }
        guard app.lifecycle.phase == .suspending else { return stopAwaitingFreeze(of: process) }
        checkStop(app)
    }
}

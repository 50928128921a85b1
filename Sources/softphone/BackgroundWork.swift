import VoipClient

/// Work the softphone must finish even if it is in the background, each kind under a
/// background task of its own. TN2277: begin a task whenever such work starts, in the
/// foreground too (it costs nothing there); once the last task ends in the background,
/// voipd suspends the app at once. A call, once answered, holds the audio session instead:
/// no budget runs out while it lasts, however long it lasts.
final class BackgroundWork {
    enum Kind: String, CaseIterable {
        /// A call from the INVITE to the end of the dialog.
        case call
        /// A REGISTER (or a reconnection) until the registrar answers.
        case registration
    }

    /// Nil without voipd: nothing suspends the app, so no task is needed.
    private let application: VoIPApplication?
    private var tasks: [Kind: BackgroundTaskIdentifier] = [:]
    /// Called when voipd says the budget is running out: stop the work without waiting on
    /// the network. The task is ended right after.
    var willExpire: (Kind) -> Void = { _ in }

    init(application: VoIPApplication?) {
        self.application = application
    }

    func isRunning(_ kind: Kind) -> Bool { tasks[kind] != nil }

    func begin(_ kind: Kind) {
        guard let application, tasks[kind] == nil else { return }
        do {
            let id = try application.beginBackgroundTask(name: kind.rawValue) { [unowned self] in expire(kind) }
            guard id != .invalid else { return Log.write("lifecycle", "no background time left for the \(kind.rawValue)") }
            tasks[kind] = id
            Log.write("lifecycle", "background task \(id.rawValue) began: \(kind.rawValue)")
        } catch {
            Log.write("lifecycle", "cannot begin a background task for the \(kind.rawValue): \(error)")
        }
    }

    /// Whether the audio session is active: a call is up.
    private(set) var inCall = false

    /// The call is up (true) or over (false). Over in the background, the app may be
    /// stopped before this returns.
    func setInCall(_ active: Bool) {
        guard let application, inCall != active else { return }
        Log.write("lifecycle", active ? "audio session active: in a call" : "audio session inactive: the call is over")
        do {
            try application.setAudioSessionActive(active)
            inCall = active
        } catch {
            Log.write("lifecycle", "cannot make the audio session \(active ? "active" : "inactive"): \(error)")
        }
    }

    func end(_ kind: Kind) {
        guard let application, let id = tasks.removeValue(forKey: kind) else { return }
        // Said before, not after: with its last task ended in the background, the app may be
        // stopped before the request returns.
        Log.write("lifecycle", "ending background task \(id.rawValue): \(kind.rawValue)")
        do {
            try application.endBackgroundTask(id)
        } catch {
            Log.write("lifecycle", "cannot end background task \(id.rawValue): \(error)")
        }
    }

    private func expire(_ kind: Kind) {
        guard tasks[kind] != nil else { return }
        Log.write("lifecycle", "the background task for the \(kind.rawValue) is expiring")
        willExpire(kind)
        end(kind)
    }
}

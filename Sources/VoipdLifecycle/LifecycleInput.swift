import VoipdVocabulary

/// How a process ended, as the lifecycle needs to know it (no system types here).
public enum ProcessEnd: Equatable, Sendable {
    case exited(code: Int32)
    case signaled(signal: Int32, name: String)
    /// The process is gone but its status cannot be known (it was not voipd's child).
    case unknown
}

/// The timers of one app. The lifecycle asks for them by kind; the daemon maps them onto
/// its timerfd.
public enum LifecycleTimer: String, Hashable, Sendable, CaseIterable, Codable {
    /// The watchdog on the event in flight.
    case acknowledgement
    /// A launched app has this long to connect.
    case connect
    /// Time to handle a wake (voipSocketReadable, keepAlive) before suspension.
    case wakeBudget
    /// backgroundTaskWillExpire is due.
    case taskExpirationWarning
    /// The background-task budget is spent.
    case taskBudget
    /// The next keep-alive wake.
    case keepAlive
    /// A throttled relaunch may go ahead.
    case relaunchThrottle
    /// The call has lasted the maximum the configuration allows.
    case callLimit
    /// Reclaim a long-suspended app's ordinary sockets.
    case reclaim
    /// Hibernate a long-suspended app: page its memory out.
    case hibernate
    /// A terminating app that has not exited by now is killed.
    case exitGrace
}

/// Everything that can happen to an app: requests, the app's own messages, what the kernel
/// reports, and timers firing.
public enum LifecycleInput: Equatable, Sendable {
    /// The process was started (by `voipctl launch`, a relaunch, or adopted on connect).
    case launched(inBackground: Bool, reason: String)
    /// A process an earlier voipd started and left suspended (frozen by the cgroup freezer,
    /// or stopped with SIGSTOP) is supervised again as it is, without running it: voipd
    /// holds its VoIP sockets, and they wake it. It connects again once woken. Its
    /// keep-alive, when that voipd recorded one, goes on (it cannot ask for it again before
    /// it runs).
    case takenBackSuspended(reason: String, keepAlive: RecordedKeepAlive?)
    /// The process could not be started.
    case launchFailed(String)
    /// The app identified itself on a control connection.
    case connected
    /// The app's control connection closed while the process lives on.
    case disconnected
    case foregroundRequested
    case backgroundRequested
    /// An interruption (an incoming-call alert) begins: active → inactive.
    case interruptionBegan
    /// The interruption ends: inactive → active.
    case interruptionEnded
    /// The app acknowledged the event with this id.
    case acknowledged(eventID: UInt64)
    /// The kernel confirmed the process is stopped.
    case stopConfirmed
    /// The stop asked for (`.suspend`) failed: the signal could not be sent, or the freezer
    /// not written (the system's error in words); or a suspended process found running
    /// (someone else's `SIGCONT`) could not be stopped again. The process runs on.
    case stopFailed(String)
    /// The resume asked for (`.resume`) failed: the signal could not be sent, or the freezer
    /// not thawed (the system's error in words). The process stays stopped or frozen, and
    /// runs no code.
    case resumeFailed(String)
    /// Data or a hang-up on a held VoIP socket.
    case socketReady(SocketReadiness)
    /// Background transfers have events for the app (docs/TRANSFERS.md): a suspended app is
    /// resumed for them as for data, one not running is launched in the background; refused
    /// when it cannot be reached.
    case transferEventsReady(delivery: UInt64)
    /// The process ended.
    case processExited(ProcessEnd)
    case beginBackgroundTask(name: String)
    case endBackgroundTask(id: UInt64)
    /// Periodic keep-alive wakes (nil clears).
    case setKeepAlive(Duration?)
    /// The app's audio session became active (a call began) or inactive (it ended).
    case setAudioSessionActive(Bool)
    case timerFired(LifecycleTimer)
    /// `voipctl terminate`.
    case terminateRequested
    /// `voipctl kill`: a force quit.
    case killRequested
    /// Chosen as a memory-pressure victim.
    case memoryPressureKill
    /// `voipctl reclaim`.
    case reclaimRequested
    /// `voipctl hibernate`.
    case hibernateRequested
    case screenLocked
    case screenUnlocked
    /// How many VoIP sockets are held for the app now.
    case heldSocketsChanged(Int)
    /// Its supervisor measured the process quiet: nothing unread on its VoIP sockets and its
    /// threads below the activity threshold for a whole window. An app that suspends when
    /// quiet, in the background with nothing else keeping it running, is suspended.
    case quietMeasured
    /// The app's policy was replaced: launched again with other options, or its manifest
    /// reloaded. What it no longer allows takes effect at once.
    case policyChanged(AppPolicy)
    /// The daemon is stopping: nothing may be left stopped.
    case shutdown
}

/// What the daemon must do. The lifecycle never performs system calls itself.
public enum LifecycleAction: Equatable, Sendable, Codable {
    /// Send this event on the app's control connection.
    case deliver(AppEvent)
    /// Stop the process (SIGSTOP or a freezer); report back with `.stopConfirmed`.
    case suspend
    /// Continue the process.
    case resume
    /// The app is being told something now (an event is on its way), or it is waiting for
    /// the reply to a request that may stop it (the last `endBackgroundTask`): whatever
    /// arrived on its held sockets before this, it has had the chance to see; whatever
    /// arrives after it may not have handled, even if it reads it before it is stopped.
    case markSockets
    /// The app is told of this socket now, in the event on its way (or, for an app that
    /// cannot be told, by its resumption): what waits on it and its hang-up are known to it
    /// from here on. Only for a readiness that became an event: one the lifecycle passed
    /// over (a second socket found ready at the same stop, while the first one's wake already
    /// runs the app) was never told, and must still count as new after the next stop.
    case markReported(SocketReadiness)
    /// Watch the held VoIP sockets for data and hang-up. Whatever arrived since the last
    /// `markSockets`, read since or not, and whatever is unread and was never reported,
    /// wakes the app. Asked again once the stop is confirmed: what the app read between the
    /// decision and the stop is found then.
    case armSockets
    /// Stop watching them (the app reads its sockets itself while it runs).
    case disarmSockets
    case startTimer(LifecycleTimer, after: Duration)
    case cancelTimer(LifecycleTimer)
    /// SIGKILL, with the reason recorded.
    case kill(TerminationReason)
    /// SIGTERM, for an app that cannot be told willTerminate.
    case requestExit
    /// Start the process again.
    case launch(inBackground: Bool, reason: String)
    /// Make the app's ordinary (non-VoIP) network sockets unusable.
    case reclaimSockets(reason: String)
    /// Page the stopped app's memory out, if its dirty memory is within the limit (seed
    /// 004's hibernation). The app stays suspended; the next `.resume` ends the hibernation
    /// and drops a page-out still under way. `requested`: asked for (`voipctl hibernate`),
    /// not decided by the timer.
    case hibernate(requested: Bool, reason: String)
    /// The public state changed; recorded in the event stream.
    case transition(from: AppState, to: AppState, reason: String)
}

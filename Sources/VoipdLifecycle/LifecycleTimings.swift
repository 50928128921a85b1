import VoipdVocabulary

/// Every duration of the lifecycle, with iOS's value as the default. `scaled(by:)` shrinks
/// them all at once, so tests never wait for iOS's real minutes.
public struct LifecycleTimings: Equatable, Sendable, Codable {
    /// didEnterBackground must be acknowledged within this, or the app is killed (~5 s on iOS).
    public var didEnterBackgroundWatchdog: Duration = .seconds(5)
    /// willResignActive, willEnterForeground and didBecomeActive (iOS allowed ~10 s to resume).
    public var foregroundTransitionWatchdog: Duration = .seconds(10)
    /// willTerminate must be acknowledged within this (~5 s on iOS).
    public var willTerminateWatchdog: Duration = .seconds(5)
    /// Background-task time after leaving the foreground (iOS 7+: 180 s).
    public var backgroundTaskBudget: Duration = .seconds(180)
    /// Background-task time when resumed in the background (iOS: ~30 s).
    public var resumedTaskBudget: Duration = .seconds(30)
    /// backgroundTaskWillExpire comes this long before the budget ends; it is also the
    /// deadline for acknowledging it.
    public var expirationWarning: Duration = .seconds(5)
    /// Time to handle voipSocketReadable or keepAlive before being suspended again (10 s).
    public var wakeBudget: Duration = .seconds(10)
    /// The shortest keep-alive interval an app may ask for (iOS: 600 s), unless its
    /// manifest gives its own (``AppPolicy/keepAliveMinimum``).
    public var keepAliveMinimum: Duration = .seconds(600)
    /// The lowest keep-alive minimum a manifest may give an app, for registrars that grant
    /// less than `keepAliveMinimum` covers: wakes more often than this cost more battery
    /// than any registrar is worth.
    public var keepAliveFloor: Duration = .seconds(60)
    /// Keep-alive wakes due within this window of one another are made one system wake-up.
    public var keepAliveTolerance: Duration = .seconds(30)
    /// After SIGTERM (to an app that does not speak the protocol), SIGKILL follows this late.
    public var terminationGrace: Duration = .seconds(5)
    /// A launched app that does not connect within this is treated as one that does not
    /// speak the protocol: its events are no longer waited for.
    public var connectTimeout: Duration = .seconds(10)
    /// Relaunches of an app that keeps dying are at least this far apart (launchd's
    /// ThrottleInterval); the gap doubles with each quick death up to `relaunchThrottleMaximum`.
    public var relaunchThrottle: Duration = .seconds(10)
    public var relaunchThrottleMaximum: Duration = .seconds(300)
    /// Reclaim a suspended app's ordinary sockets after it has been suspended this long
    /// (nil: never; iOS did it on lock and under pressure only).
    public var reclaimAfterSuspension: Duration? = nil
    /// Hibernate a suspended app (page its memory out, seed 004) after it has been suspended
    /// this long (nil: never). A minute: long enough that an app woken again and again for
    /// keep-alives and calls is not paged out between wakes, short enough that an idle
    /// app's memory goes back to the system soon.
    public var hibernateAfterSuspension: Duration? = .seconds(60)
    /// The longest a call (an active audio session) keeps an app from being suspended
    /// (nil: no limit, as on iOS). Then the call state ends as if the app had ended it.
    public var maximumCallDuration: Duration? = nil

    public init() {}

    /// The longest duration a configuration may give, a year: longer is a mistake, and a
    /// `Duration` made from an unbounded number of seconds traps.
    public static let longest: Duration = .seconds(365 * 24 * 3600)

    /// Every duration multiplied by `factor` (e.g. 0.01 in tests).
    public func scaled(by factor: Double) -> LifecycleTimings {
        var t = self
        for entry in Self.durations { t[keyPath: entry.keyPath] = self[keyPath: entry.keyPath] * factor }
        for entry in Self.optionalDurations { t[keyPath: entry.keyPath] = self[keyPath: entry.keyPath].map { $0 * factor } }
        return t
    }

    /// Every duration by its name (the names of the configuration file and `--timing`).
    public static var durations: [(name: String, keyPath: WritableKeyPath<LifecycleTimings, Duration>)] { [
        ("didEnterBackgroundWatchdog", \.didEnterBackgroundWatchdog),
        ("foregroundTransitionWatchdog", \.foregroundTransitionWatchdog),
        ("willTerminateWatchdog", \.willTerminateWatchdog),
        ("backgroundTaskBudget", \.backgroundTaskBudget),
        ("resumedTaskBudget", \.resumedTaskBudget),
        ("expirationWarning", \.expirationWarning),
        ("wakeBudget", \.wakeBudget),
        ("keepAliveMinimum", \.keepAliveMinimum),
        ("keepAliveFloor", \.keepAliveFloor),
        ("keepAliveTolerance", \.keepAliveTolerance),
        ("terminationGrace", \.terminationGrace),
        ("connectTimeout", \.connectTimeout),
        ("relaunchThrottle", \.relaunchThrottle),
        ("relaunchThrottleMaximum", \.relaunchThrottleMaximum),
    ] }

    /// The names ``setting(_:seconds:)`` accepts.
    public static var names: [String] { durations.map(\.name) + optionalDurations.map(\.name) }

    /// The durations that may be "never" (0 in the configuration).
    static var optionalDurations: [(name: String, keyPath: WritableKeyPath<LifecycleTimings, Duration?>)] { [
        ("reclaimAfterSuspension", \.reclaimAfterSuspension),
        ("hibernateAfterSuspension", \.hibernateAfterSuspension),
        ("maximumCallDuration", \.maximumCallDuration),
    ] }

    /// A copy with the duration `name` set to `seconds` (nil when there is no such name, or
    /// `seconds` is not from 0 to ``longest``). The optional durations
    /// (`reclaimAfterSuspension`, `hibernateAfterSuspension`, `maximumCallDuration`) take 0
    /// for "never".
    public func setting(_ name: String, seconds: Double) -> LifecycleTimings? {
        guard seconds >= 0, seconds <= Self.longest.seconds else { return nil }
        var copy = self
        if let entry = Self.optionalDurations.first(where: { $0.name == name }) {
            copy[keyPath: entry.keyPath] = seconds == 0 ? nil : .seconds(seconds)
            return copy
        }
        guard let entry = Self.durations.first(where: { $0.name == name }) else { return nil }
        copy[keyPath: entry.keyPath] = .seconds(seconds)
        return copy
    }

    /// How early the daemon may fire `timer`, started to fire `after` from now, to share a
    /// wake-up with another deadline: keep-alives by `keepAliveTolerance`, but never by half
    /// their interval or more. A tolerance as long as the interval would let every wake-up
    /// fire the next keep-alive at once, which starts a wake budget whose end fires the next
    /// keep-alive at once, and so on without the clock moving (found by Tests/Fuzz).
    public func tolerance(of timer: LifecycleTimer, after: Duration) -> Duration {
        timer == .keepAlive ? min(keepAliveTolerance, after / 2) : .zero
    }

    /// The acknowledgement deadline of an event kind; nil for the kinds governed by the
    /// wake budget instead of the watchdog.
    public func watchdog(for kind: AppEventKind) -> Duration? {
        switch kind {
        case .didEnterBackground: return didEnterBackgroundWatchdog
        case .willResignActive, .willEnterForeground, .didBecomeActive: return foregroundTransitionWatchdog
        case .willTerminate: return willTerminateWatchdog
        case .backgroundTaskWillExpire: return expirationWarning
        case .voipSocketReadable, .keepAlive, .backgroundTransferEvents: return nil
        }
    }
}

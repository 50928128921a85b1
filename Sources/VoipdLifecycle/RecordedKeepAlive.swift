import VoipdVocabulary

/// An app's keep-alive as a voipd wrote it down (the service manager's store, the state
/// file), so that the next voipd, taking the app's process back suspended, keeps waking it
/// (``LifecycleInput/takenBackSuspended(reason:keepAlive:)``). The process asked for it from
/// the voipd that died; it will not ask again before it runs, and a keep-alive is what runs
/// it: without this, a softphone refreshing its registration in its keep-alive handler lets
/// the registration lapse, and misses its calls.
public struct RecordedKeepAlive: Equatable, Sendable, Codable {
    /// The interval the app asked for.
    public var interval: Duration
    /// When the next keep-alive was due when this was written, if known. Instants are
    /// `CLOCK_MONOTONIC`'s, the same for every process of one boot (the state file and the
    /// store are of one boot).
    public var due: MonotonicInstant?

    public init(interval: Duration, due: MonotonicInstant?) {
        self.interval = interval
        self.due = due
    }

    /// How long after `now` the first keep-alive is due: at the recorded instant if it is
    /// still ahead (never further than `interval`); at once if it passed or is unknown. A
    /// record is written when the keep-alive is set, not after each wake, so an instant in
    /// the past may be one voipd honoured before it died: a keep-alive early is harmless,
    /// one missed may be a registration lapsed.
    public func firstDelay(at now: MonotonicInstant, interval actual: Duration) -> Duration {
        guard let due else { return .zero }
        let ahead = now.duration(to: due)
        return ahead > .zero ? min(ahead, actual) : .zero
    }
}

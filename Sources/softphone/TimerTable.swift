/// Deadlines by name on the monotonic clock: what a poll loop waits for besides its
/// descriptors. A deadline that passes while the process is stopped is simply due at once
/// when it runs again.
struct TimerTable<Key: Hashable> {
    private var deadlines: [Key: ContinuousClock.Instant] = [:]

    /// Arms `key` to be due after `delay`, replacing an earlier arming.
    mutating func arm(_ key: Key, after delay: Duration) {
        deadlines[key] = .now + delay
    }

    mutating func cancel(_ key: Key) {
        deadlines[key] = nil
    }

    func isArmed(_ key: Key) -> Bool { deadlines[key] != nil }

    /// The earliest deadline armed.
    var earliest: ContinuousClock.Instant? { deadlines.values.min() }

    /// Disarms and returns the keys due at `now`, earliest first.
    mutating func takeDue(at now: ContinuousClock.Instant) -> [Key] {
        let due = deadlines.filter { $0.value <= now }.sorted { $0.value < $1.value }.map(\.key)
        for key in due { deadlines[key] = nil }
        return due
    }
}

/// The earlier of two optional deadlines.
func earliest(_ a: ContinuousClock.Instant?, _ b: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
    switch (a, b) {
    case let (a?, b?): min(a, b)
    case let (a?, nil): a
    case let (nil, b): b
    }
}

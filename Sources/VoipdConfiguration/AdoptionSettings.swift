import VoipdAdoption

/// How a program is adopted: from its manifest (`adopt`, `quiet`, `keepAliveSeconds`) or
/// from `voipctl launch --adopt RULE`.
public struct AdoptionSettings: Sendable, Equatable {
    public var policy: AdoptionPolicy
    public var thresholds: QuietThresholds
    /// How often it is resumed so that its own timers (re-registration) run; nil: the
    /// keep-alive minimum. Never less than the minimum.
    public var keepAlive: Duration?

    public init(policy: AdoptionPolicy, thresholds: QuietThresholds = QuietThresholds(), keepAlive: Duration? = nil) {
        self.policy = policy
        self.thresholds = thresholds
        self.keepAlive = keepAlive
    }
}

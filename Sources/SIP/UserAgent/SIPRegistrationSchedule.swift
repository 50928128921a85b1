/// When a user agent whose process may be suspended refreshes its registration: on its own
/// timer while it runs, and on a periodic wake (voipd's keep-alive) while it is suspended,
/// since no timer of its own fires then.
///
/// A registration made at `t` lasts until `t + granted`. A phone suspended just before its
/// own refresh is due (at `t + refreshDelay`) is next woken at most `wakeInterval` later, so
/// the two together must fit in the grant, less a margin for the REGISTER's round trip:
/// `refreshDelay + wakeInterval ≤ granted − margin`. The schedule keeps the preferred wake
/// interval when the grant allows it, and otherwise lowers it (never below the shortest the
/// policy permits), so the registration never lapses; when even the shortest does not fit,
/// it says how long the phone may be unreachable (``lapse``).
///
/// All durations are whole seconds, as in `Expires` and in a keep-alive interval.
public struct SIPRegistrationSchedule: Hashable, Sendable {
    /// What the application may ask of the supervisor that wakes it.
    public struct WakePolicy: Hashable, Sendable {
        /// The wake interval the application would like (voipd's keep-alive, 600 s by default).
        public var preferred: Int
        /// The shortest wake interval the policy permits (voipd's `keepAliveMinimum`, 600 s
        /// unless the app's manifest or voipd's configuration lowers it).
        public var shortest: Int

        public init(preferred: Int, shortest: Int) {
            self.preferred = max(1, preferred)
            self.shortest = max(1, shortest)
        }

        /// The interval the application may actually get: the preferred one, unless the
        /// policy forbids it.
        var permittedPreferred: Int { max(preferred, shortest) }
    }

    /// The registrar's grant, in seconds.
    public let granted: Int
    /// The wake interval to ask for, in seconds.
    public let wakeInterval: Int
    /// How long after the registration to refresh it while the process runs.
    public let refreshDelay: Int
    /// Whether the wake interval is below the preferred one because the grant is short.
    public let isWakeIntervalLowered: Bool
    /// The longest time, in seconds, a suspended phone may go unregistered before its next
    /// wake; 0 when the schedule covers the grant.
    public let lapse: Int

    /// The time kept in hand, in seconds, between a refresh and the end of the grant: a tenth
    /// of it, at most 30 s, and at least 2 s, since a registrar that counts whole seconds
    /// (Kamailio does) may end a binding up to 1 s before the grant is over by the phone's
    /// clock, and the wake and the REGISTER's round trip need time too.
    public static func margin(forGranted granted: Int) -> Int { min(max(granted / 10, 2), 30) }

    /// The expiry to ask for so that a registration can cover the preferred wake interval
    /// with time to spare for a refresh while running; `configured` if that is longer.
    public static func requestedExpiry(configured: Int, policy: WakePolicy) -> Int {
        max(configured, policy.permittedPreferred + 2 * margin(forGranted: Int.max))
    }

    /// The shortest grant, in seconds, that a suspended phone under `policy` can keep alive
    /// at every moment.
    public static func shortestCoveredGrant(policy: WakePolicy) -> Int {
        var granted = policy.shortest
        while !SIPRegistrationSchedule(granted: granted, policy: policy).coversGrant { granted += 1 }
        return granted
    }

    /// The schedule for a registration granted for `granted` seconds.
    public init(granted: Int, policy: WakePolicy) {
        let granted = max(1, granted)
        let margin = Self.margin(forGranted: granted)
        let usable = max(1, granted - margin)
        let preferred = policy.permittedPreferred
        // Split the usable time between the running refresh and the wake, the wake taking
        // what it prefers when there is room, half the grant otherwise.
        let wake = min(preferred, max(policy.shortest, usable / 2))
        if usable - wake >= margin {
            self.init(granted: granted, wakeInterval: wake, refreshDelay: usable - wake, lowered: wake < preferred, lapse: 0)
        } else {
            // Even the shortest permitted wake does not fit: refresh as usual while running,
            // and wake as often as the policy permits.
            let wake = min(preferred, policy.shortest)
            let refresh = max(1, usable / 2)
            self.init(granted: granted, wakeInterval: wake, refreshDelay: refresh, lowered: wake < preferred, lapse: refresh + wake - usable)
        }
    }

    private init(granted: Int, wakeInterval: Int, refreshDelay: Int, lowered: Bool, lapse: Int) {
        self.granted = granted
        self.wakeInterval = wakeInterval
        self.refreshDelay = refreshDelay
        self.isWakeIntervalLowered = lowered
        self.lapse = max(0, lapse)
    }

    /// Whether a suspended phone stays registered at every moment.
    public var coversGrant: Bool { lapse == 0 }

    /// How long, in seconds, a phone suspended just before its refresh was due stays
    /// registered without a wake: the longest wake interval that keeps it reachable (what
    /// it tells its supervisor, which warns when its keep-alive cannot be that short).
    public var reachableFor: Int { wakeInterval - lapse }
}

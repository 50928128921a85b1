/// Whether an app's keep-alive wakes it as often as it needs to stay reachable (issue 10,
/// part 3): a SIP phone whose registrar grants 60 s cannot be kept registered by a keep-alive
/// every 600 s, and while suspended it misses calls for most of each interval. The app says
/// how long it stays reachable without a wake (`reachableFor`); this says, in the app's own
/// (unscaled) seconds, what is wrong and what would fix it.
struct KeepAliveCoverage: Equatable {
    /// The keep-alive interval the app has.
    var interval: Double
    /// The shortest the app may have: its manifest's `keepAliveMinimum`, or voipd's.
    var minimum: Double
    /// The lowest a manifest may give (`keepAliveFloor`).
    var floor: Double
    /// How long the app said it stays reachable without a wake.
    var reachableFor: Double

    /// Nil when the keep-alive covers what the app needs; otherwise the warning for the log
    /// and `status`.
    var warning: String? {
        guard reachableFor < interval else { return nil }
        let gap = "while suspended it may be unreachable (a registration lapsed) for up to \(Self.seconds(interval - reachableFor)) before each keep-alive"
        let need = "it stays reachable for \(Self.seconds(reachableFor)) without a wake"
        guard reachableFor < minimum else {
            return "\(need), but its keep-alive is \(Self.seconds(interval)): \(gap); it may ask for a keep-alive of \(Self.seconds(reachableFor))"
        }
        let cause = "\(need), but the shortest keep-alive it may have is \(Self.seconds(minimum))"
        guard reachableFor < floor else {
            return "\(cause): \(gap); give its manifest \"keepAliveMinimum\": \(SecondsFormat.tenths(reachableFor.rounded(.down))) (at least keepAliveFloor, \(Self.seconds(floor)))"
        }
        return "\(cause), and no manifest may go below keepAliveFloor (\(Self.seconds(floor))): \(gap); make what it renews last longer (its registrar's grant), or lower keepAliveFloor"
    }

    static func seconds(_ value: Double) -> String { "\(SecondsFormat.tenths(value)) s" }
}

/// A point on the monotonic clock (`CLOCK_MONOTONIC`), the one type voipd uses for instants;
/// what separates two of them is a `Duration`. VoipdSystem reads the clock
/// (`MonotonicInstant.now`) and arms timers for an instant.
public struct MonotonicInstant: InstantProtocol, Codable, Sendable, CustomStringConvertible {
    /// Time since the clock's origin (the boot).
    public var sinceOrigin: Duration

    public init(sinceOrigin: Duration) { self.sinceOrigin = sinceOrigin }

    /// The clock's origin.
    public static let origin = MonotonicInstant(sinceOrigin: .zero)

    public func advanced(by duration: Duration) -> MonotonicInstant { MonotonicInstant(sinceOrigin: sinceOrigin + duration) }

    public func duration(to other: MonotonicInstant) -> Duration { other.sinceOrigin - sinceOrigin }

    public static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.sinceOrigin < b.sinceOrigin }

    public static func + (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant { instant.advanced(by: duration) }

    public static func - (instant: MonotonicInstant, duration: Duration) -> MonotonicInstant { instant.advanced(by: .zero - duration) }

    public static func += (instant: inout MonotonicInstant, duration: Duration) { instant = instant + duration }

    /// The time from `earlier` to this instant (negative if `earlier` is later).
    public static func - (later: MonotonicInstant, earlier: MonotonicInstant) -> Duration { later.sinceOrigin - earlier.sinceOrigin }

    /// Whole nanoseconds since the origin (0 before it, saturating far after it): for a
    /// kernel `timespec` and for timestamps written as numbers.
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = sinceOrigin.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000)).partialValue
    }

    /// Encoded as the `Duration` since the origin.
    public init(from decoder: any Decoder) throws {
        sinceOrigin = try decoder.singleValueContainer().decode(Duration.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(sinceOrigin)
    }

    public var description: String { "\(sinceOrigin.seconds)s" }
}

extension Duration {
    /// Seconds as a Double, for messages and JSON.
    public var seconds: Double {
        let (s, attoseconds) = components
        return Double(s) + Double(attoseconds) / 1e18
    }
}

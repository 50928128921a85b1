/// How voipd hibernates suspended apps (seed 004; docs/LIFECYCLE.md, "Hibernated"). When it
/// does is `timings.hibernateAfterSuspension`.
public struct HibernationSettings: Sendable, Equatable {
    /// An app whose dirty memory (what must be written somewhere before its frames can be
    /// given back) is above this is not paged out: it stays suspended and is the first to
    /// end under memory pressure. Seed 004's figure.
    public var dirtyLimit: UInt64 = 16 << 20
    /// Paged out per turn of voipd's loop: a few milliseconds of work (docs/BENCHMARKS.md),
    /// so that data on a held socket waits no longer than that.
    public var slice: UInt64 = 4 << 20

    public init() {}
}

/// The `hibernation` object of the configuration file.
public struct HibernationFile: Codable, Sendable, Equatable {
    /// ``HibernationSettings/dirtyLimit`` in MiB.
    public var dirtyLimitMB: Double?
    /// ``HibernationSettings/slice`` in MiB.
    public var sliceMB: Double?

    public init(dirtyLimitMB: Double? = nil, sliceMB: Double? = nil) {
        self.dirtyLimitMB = dirtyLimitMB
        self.sliceMB = sliceMB
    }

    /// The keys the object may have.
    public static let keys: Set<String> = ["dirtyLimitMB", "sliceMB"]

    /// A value out of range: its key under `hibernation`, and why.
    public struct Invalid: Error {
        public var key: String
        public var message: String
    }

    /// The settings, every value checked.
    public func resolve() -> Result<HibernationSettings, Invalid> {
        var settings = HibernationSettings()
        func megabytes(_ value: Double, _ range: ClosedRange<Double>) -> UInt64? {
            guard value.isFinite, range.contains(value) else { return nil }
            return UInt64(value * 1_048_576)
        }
        if let limit = dirtyLimitMB {
            guard let bytes = megabytes(limit, 0...1_048_576) else {
                return .failure(Invalid(key: "dirtyLimitMB", message: "must be a number of MiB from 0 to 1048576, not \(limit)"))
            }
            settings.dirtyLimit = bytes
        }
        if let slice = sliceMB {
            // Less than a page would make no progress; more than a gigabyte would stall the loop for seconds.
            guard let bytes = megabytes(slice, 0.0625...1024) else {
                return .failure(Invalid(key: "sliceMB", message: "must be a number of MiB from 0.0625 to 1024, not \(slice)"))
            }
            settings.slice = bytes
        }
        return .success(settings)
    }
}

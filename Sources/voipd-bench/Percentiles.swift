/// Percentiles of latency samples, computed as the floor computes them: the sample of rank
/// ⌈p/100 · n⌉ in ascending order.
struct Percentiles {
    private let sorted: [UInt64]

    init(nanoseconds samples: [UInt64]) { sorted = samples.sorted() }

    var count: Int { sorted.count }

    /// The p-th percentile in microseconds.
    func microseconds(_ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let rank = max(Int((p / 100 * Double(sorted.count)).rounded(.up)), 1)
        return Double(sorted[min(rank, sorted.count) - 1]) / 1000
    }

    var p50: Double { microseconds(50) }
    var p99: Double { microseconds(99) }
}

/// The median of a few figures (the mean of the middle two for an even count).
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

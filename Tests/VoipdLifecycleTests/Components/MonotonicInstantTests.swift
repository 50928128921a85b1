import Foundation
import Testing
import VoipdVocabulary

@Suite("MonotonicInstant")
struct MonotonicInstantTests {
    @Test("instants and durations add and subtract exactly")
    func arithmetic() {
        let start = MonotonicInstant.at(1000)
        let later = start + .milliseconds(1500)
        #expect(later - start == .milliseconds(1500))
        #expect(start - later == .milliseconds(-1500))
        #expect(later - .milliseconds(1500) == start)
        #expect(start < later && start.duration(to: later) == .milliseconds(1500))
        var moved = start
        moved += .nanoseconds(1)
        #expect(moved.nanoseconds == 1_000_000_000_001)
    }

    @Test("nanoseconds for the kernel: none before the origin, saturated far after it")
    func nanoseconds() {
        #expect((MonotonicInstant.origin - .seconds(5)).nanoseconds == 0)
        #expect((MonotonicInstant.origin + .seconds(Int64.max / 2)).nanoseconds == .max)
    }

    /// The upgrade snapshot kept deadlines as Durations: an instant must encode the same.
    @Test("encoded as the Duration since the origin")
    func encoding() throws {
        let instant = MonotonicInstant.at(1234) + .nanoseconds(5)
        let encoded = try JSONEncoder().encode([instant])
        #expect(encoded == (try JSONEncoder().encode([instant.sinceOrigin])))
        #expect(try JSONDecoder().decode([MonotonicInstant].self, from: encoded) == [instant])
    }
}

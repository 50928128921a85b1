import Testing
@testable import VoipdDaemon
import VoipdVocabulary

/// One line of code may log `burst` lines per interval; the rest become one count.
@Suite("Log rate limiting")
struct LogRateLimiterTests {
    /// The instant `seconds` after the clock's origin.
    static func at(_ seconds: Int) -> MonotonicInstant { .origin + .seconds(seconds) }

    @Test("a flood from one line of code is cut to the burst, then counted in one line")
    func floodBecomesACount() {
        let limiter = LogRateLimiter(burst: 3, interval: .seconds(10))
        let admitted = (0..<1000).filter { _ in limiter.admit(file: #fileID, line: 1, now: Self.at(1)).admitted }
        #expect(admitted.count == 3)
        // Another line of code is not affected.
        #expect(limiter.admit(file: #fileID, line: 2, now: Self.at(1)).admitted)
        // Once the interval is over, the next line of any site brings the count first.
        let later = limiter.admit(file: #fileID, line: 2, now: Self.at(12))
        #expect(later.admitted)
        #expect(later.summaries == ["997 similar messages suppressed (\(#fileID):1)"])
        #expect(limiter.admit(file: #fileID, line: 1, now: Self.at(12)).admitted)
        #expect(limiter.admit(file: #fileID, line: 3, now: Self.at(13)).summaries.isEmpty)
    }
}

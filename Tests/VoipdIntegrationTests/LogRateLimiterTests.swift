import Testing
@testable import VoipdDaemon

/// One line of code may log `burst` lines per interval; the rest become one count.
@Suite("Log rate limiting")
struct LogRateLimiterTests {
    static let second: UInt64 = 1_000_000_000

    @Test("a flood from one line of code is cut to the burst, then counted in one line")
    func floodBecomesACount() {
        let limiter = LogRateLimiter(burst: 3, interval: .seconds(10))
        let admitted = (0..<1000).filter { _ in limiter.admit(file: #fileID, line: 1, now: Self.second).admitted }
        #expect(admitted.count == 3)
        // Another line of code is not affected.
        #expect(limiter.admit(file: #fileID, line: 2, now: Self.second).admitted)
        // Once the interval is over, the next line of any site brings the count first.
        let later = limiter.admit(file: #fileID, line: 2, now: 12 * Self.second)
        #expect(later.admitted)
        #expect(later.summaries == ["997 similar messages suppressed (\(#fileID):1)"])
        #expect(limiter.admit(file: #fileID, line: 1, now: 12 * Self.second).admitted)
        #expect(limiter.admit(file: #fileID, line: 3, now: 13 * Self.second).summaries.isEmpty)
    }
}

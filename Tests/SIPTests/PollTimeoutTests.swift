import Testing
import VoipdSystem

/// The poll timeouts of the SIP stack, the softphone and these tests (VoipdSystem's, one for
/// every clock). Under load a wait's deadline passed by less than a second gave poll a
/// negative timeout, which waits forever: the whole test run hung.
@Suite("Poll timeouts of the SIP tests")
struct PollTimeoutTests {
    @Test("a deadline already passed polls without waiting; one ahead is rounded up to whole milliseconds")
    func timeouts() {
        #expect(pollTimeout(after: .milliseconds(-10)) == 0)
        #expect(pollTimeout(after: .seconds(-2)) == 0)
        #expect(pollTimeout(after: .zero) == 0)
        #expect(pollTimeout(after: .microseconds(1)) == 1)
        #expect(pollTimeout(after: .milliseconds(1500)) == 1500)
        #expect(pollTimeout(until: ContinuousClock.now - .milliseconds(10)) == 0)
        #expect(pollTimeout(until: nil as ContinuousClock.Instant?) == -1)
    }
}

import Testing

/// The tests' own poll timeouts. Under load a wait's deadline passed by less than a second
/// gave poll a negative timeout, which waits forever: the whole test run hung.
@Suite("Poll timeouts of the SIP tests")
struct PollTimeoutTests {
    @Test("a deadline already passed polls without waiting; one ahead is rounded up to whole milliseconds")
    func timeouts() {
        #expect(milliseconds(.milliseconds(-10)) == 0)
        #expect(milliseconds(.seconds(-2)) == 0)
        #expect(milliseconds(.zero) == 0)
        #expect(milliseconds(.microseconds(1)) == 1)
        #expect(milliseconds(.milliseconds(1500)) == 1500)
    }
}

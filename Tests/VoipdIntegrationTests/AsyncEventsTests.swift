import Glibc
import Testing
import VoipClient

/// The client library's async sequence of events. The test process itself is the app here,
/// so it is only ever interrupted, never backgrounded (which would stop it).
@Suite("Client library: async events", .serialized)
struct AsyncEventsTests {
    @Test("events arrive in order through `for try await`, each acknowledged when the next is asked for")
    func asyncSequence() async throws {
        // The app is this test process: watchdogs it cannot trip, or voipd would kill the whole
        // test run when other (blocking) tests keep this task from running for a few seconds.
        let harness = try DaemonHarness(arguments: ["--timing", "foregroundTransitionWatchdog=86400"])
        defer { harness.stop() }
        let application = try VoIPApplication(name: "inprocess", socketPath: harness.socketPath)
        #expect(application.state == .active)
        try harness.control.command(.interrupt, "inprocess")
        var iterator = application.events.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.kind == .willResignActive)
        #expect(first?.state == .inactive)
        try harness.control.command(.interruptEnd, "inprocess")
        // didBecomeActive is sent only once willResignActive is acknowledged: asking for the
        // next event does that.
        let second = try await iterator.next()
        #expect(second?.kind == .didBecomeActive)
        #expect(second?.state == .active)
        try harness.control.command(.interrupt, "inprocess")
        let third = try await iterator.next()
        #expect(third?.kind == .willResignActive)
        #expect(try harness.status("inprocess").state == .inactive)
    }
}

import Glibc
import Testing
import VoipClient

/// The watchdog, interruptions, and the ways an app ends (seeds 001 and 002).
@Suite("Watchdog, interruption, termination", .serialized)
struct TerminationTests {
    @Test("an app that never acknowledges didEnterBackground is killed with the watchdog reason")
    func watchdog() throws {
        let harness = try DaemonHarness(arguments: ["--timing", "didEnterBackgroundWatchdog=0.5"])
        defer { harness.stop() }
        let app = try harness.launchTestApp("stuck", ["--no-ack", "didEnterBackground"])
        try harness.control.command(.background, "stuck")
        try app.expectEvent(.didEnterBackground)
        let ended = try harness.waitForState("stuck", .terminated)
        #expect(ended.reason == "watchdog: didEnterBackground not acknowledged within 0.5 s")
        let status = try harness.status("stuck")
        #expect(status.terminationReason?.code == .watchdog)
        #expect(status.pid == nil)
        #expect(processState(app.pid) == nil, "the process is gone")
        #expect(try harness.control.stats().contains("voipd_watchdog_kills_total 1"))
    }

    @Test("interrupt and interrupt-end: willResignActive and didBecomeActive, never the background")
    func interruption() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        try harness.control.command(.interrupt, "phone")
        try app.expectEvent(.willResignActive)
        try harness.waitForState("phone", .inactive)
        try harness.control.command(.interruptEnd, "phone")
        try app.expectEvent(.didBecomeActive)
        try harness.waitForState("phone", .active)
        #expect(!app.received(.didEnterBackground))
        try harness.suspend("phone")
        #expect(throws: VoipdError.self) { try harness.control.command(.interrupt, "phone") }
    }

    @Test("terminate: a running app gets willTerminate, then it ends")
    func terminateRunning() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        try harness.control.command(.terminate, "phone")
        try app.expectEvent(.willTerminate)
        let ended = try harness.waitForState("phone", .terminated)
        #expect(ended.reason == "terminated: terminate requested")
    }

    @Test("terminate: a suspended app is killed without willTerminate")
    func terminateSuspended() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        try harness.suspend("phone")
        try harness.control.command(.terminate, "phone")
        let ended = try harness.waitForState("phone", .terminated)
        #expect(ended.reason.contains("no willTerminate"))
        #expect(!app.received(.willTerminate))
    }

    @Test("kill is a force quit: SIGKILL, no willTerminate")
    func forceQuit() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("phone")
        try harness.control.command(.kill, "phone")
        let ended = try harness.waitForState("phone", .terminated)
        #expect(ended.reason.hasPrefix("forceQuit"))
        #expect(!app.received(.willTerminate))
    }

    @Test("an app that exits on suspend is terminated instead of suspended (UIApplicationExitsOnSuspend)")
    func exitsOnSuspend() throws {
        let harness = try DaemonHarness()
        defer { harness.stop() }
        let app = try harness.launchTestApp("oldschool", exitsOnSuspend: true)
        try harness.control.command(.background, "oldschool")
        try app.expectEvent(.didEnterBackground)
        try app.expectEvent(.willTerminate)
        let ended = try harness.waitForState("oldschool", .terminated)
        #expect(ended.reason.hasPrefix("exitsOnSuspend"))
        #expect(!(try harness.control.events("oldschool").contains { $0.to == .suspended }))
    }
}

import Glibc
import Testing
import VoipClient

/// setKeepAliveTimeout: periodic wakes with a floor, coalesced across apps.
@Suite("Keep-alive", .serialized)
struct KeepAliveTests {
    @Test("below the minimum is refused; wakes arrive on schedule; two apps due within the tolerance wake together")
    func scheduleAndCoalescing() throws {
        let harness = try DaemonHarness(arguments: ["--timing", "keepAliveMinimum=2", "--timing", "keepAliveTolerance=1"])
        defer { harness.stop() }
        let first = try harness.launchTestApp("first")
        let second = try harness.launchTestApp("second")
        try first.send(.keepAlive(seconds: 1))
        let answer = try first.expect { $0 == .keepAliveSet || $0.keepAliveRefusal != nil }
        #expect(answer.keepAliveRefusal?.contains("minimum") == true, "\(answer)")

        for app in [first, second] {
            try harness.control.command(.background, app.name)
            try harness.waitForState(app.name, .suspended)
        }
        // Both are suspended; each, briefly in the foreground, asks for 3 s, one after the other.
        let firstSet = try setKeepAlive(3, for: first, harness)
        let secondSet = try setKeepAlive(3, for: second, harness)
        #expect(secondSet - firstSet < 1, "set within the tolerance of each other")

        try first.expectEvent(.keepAlive, timeout: .seconds(10))
        try second.expectEvent(.keepAlive, timeout: .seconds(10))
        try first.expect(.keepAliveHandler)
        let firstWake = try harness.waitForState("first", .background)
        let secondWake = try harness.waitForState("second", .background)
        #expect(firstWake.reason == "keep-alive")
        #expect(secondWake.reason == "keep-alive")
        #expect(abs(firstWake.time - secondWake.time) < 0.2, "one wake-up of the system for both")
        #expect(firstWake.time - firstSet >= 2.9 && firstWake.time - firstSet < 4, "on schedule")
        // The second came early, with the first: within its tolerance.
        #expect(secondWake.time - secondSet < 3)
        try harness.waitForState("first", .suspended)
        try harness.waitForState("second", .suspended)
        // And periodically.
        try first.expectEvent(.keepAlive, timeout: .seconds(10))
        #expect(try harness.status("first").wakes >= 2)
    }

    /// Brings a suspended app to the foreground, has it set its keep-alive timeout, and
    /// suspends it again; returns when the timeout was set.
    func setKeepAlive(_ seconds: Double, for app: TestAppHandle, _ harness: DaemonHarness) throws -> Double {
        try harness.control.command(.foreground, app.name)
        try harness.waitForState(app.name, .active)
        try app.send(.keepAlive(seconds: seconds))
        try app.expect(.keepAliveSet)
        let set = wallClock()
        try harness.control.command(.background, app.name)
        try harness.waitForState(app.name, .suspended)
        return set
    }

    func wallClock() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}

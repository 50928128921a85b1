import Glibc
import Testing
import VoipClient

/// Relaunches back off when an app keeps dying (launchd's ThrottleInterval).
@Suite("Relaunch backoff", .serialized)
struct RelaunchTests {
    @Test("the first crash relaunches at once; a crash loop is relaunched ever later")
    func crashLoop() throws {
        let harness = try DaemonHarness(arguments: ["--timing", "relaunchThrottle=1", "--timing", "relaunchThrottleMaximum=10"])
        defer { harness.stop() }
        let peer = try harness.makePeer()
        // The app dies whenever it is woken; the data stays unread, so it keeps coming back.
        let (app, remote) = try WakePathTests.appWithVoIPSocket(harness, "crasher", peer: peer, arguments: ["--exit-on-wake", "--no-read"])
        try WakePathTests.suspend(harness, app)
        try remote.write("INVITE")
        var deaths: [Double] = []
        var launches: [Double] = []
        for _ in 0..<4 {
            deaths.append(try harness.waitForState("crasher", .terminated, timeout: .seconds(20)).time)
            _ = try harness.acceptApp("crasher")
            let relaunch = try #require(try harness.control.events("crasher").last { $0.from == .terminated })
            launches.append(relaunch.time)
        }
        let gaps = zip(deaths, launches).map { $1 - $0 }
        #expect(gaps[0] < 0.5, "one crash: relaunched at once (\(gaps))")
        #expect(gaps[1] >= 0.8 && gaps[1] < 1.5, "two quick deaths: about the 1 s throttle (\(gaps))")
        #expect(gaps[2] >= 1.8 && gaps[2] < 2.5, "then 2 s (\(gaps))")
        #expect(gaps[3] >= 3.8 && gaps[3] < 4.5, "then 4 s (\(gaps))")
        #expect(try harness.status("crasher").launches == 5)
    }
}

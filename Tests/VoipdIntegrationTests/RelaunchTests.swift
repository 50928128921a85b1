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
        // The app dies whenever it is woken; the data stays unread, so it keeps coming back.
        let (app, remote) = try harness.launchAppWithVoIPSocket("crasher", ["--exit-on-wake", "--no-read"])
        try harness.suspend(app)
        try remote.write("INVITE")
        var deaths: [Double] = []
        var launches: [Double] = []
        for _ in 0..<4 {
            deaths.append(try harness.waitForState("crasher", .terminated, timeout: .seconds(20)).time)
            _ = try harness.acceptApp("crasher")
            let relaunch = try #require(try harness.control.events("crasher").last { $0.from == .terminated })
            launches.append(relaunch.time)
        }
        // The throttle counts from the previous launch (docs/LIFECYCLE.md, launchd's
        // ThrottleInterval), not from the death: an app slow to die under load is relaunched
        // sooner after its death. Each launch's record is written after the launch's turn read
        // its clock (the spawn comes between): 0.1 s of that, no more, is allowed for.
        let sinceDeath = zip(deaths, launches).map { $1 - $0 }
        let sinceLaunch = zip(launches, launches.dropFirst()).map { $1 - $0 }
        #expect(sinceDeath[0] < 0.5, "one crash: relaunched at once (\(sinceDeath))")
        #expect(sinceLaunch[0] >= 0.9 && sinceDeath[1] < 1.5, "two quick deaths: the 1 s throttle (\(sinceLaunch), \(sinceDeath))")
        #expect(sinceLaunch[1] >= 1.9 && sinceDeath[2] < 2.5, "then 2 s (\(sinceLaunch), \(sinceDeath))")
        #expect(sinceLaunch[2] >= 3.9 && sinceDeath[3] < 4.5, "then 4 s (\(sinceLaunch), \(sinceDeath))")
        #expect(try harness.status("crasher").launches == 5)
    }
}

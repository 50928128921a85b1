import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Events that are not acknowledged in time end the app (iOS's 0x8badf00d).
@Suite("Watchdog")
struct WatchdogTests {
    @Test("didEnterBackground not acknowledged within 5 s: killed with reason watchdog")
    func didEnterBackgroundWatchdog() {
        var driver = Driver.at(.active)
        let enter = driver.leaveForeground()
        #expect(enter.startDelay(of: .acknowledgement) == .seconds(5))

        let kill = driver.feed(.timerFired(.acknowledgement), after: .seconds(5))
        #expect(kill.steps == [.kill(.watchdog)])
        #expect(driver.app.pendingTermination?.code == .watchdog)
        // Too late: the acknowledgement no longer leads to a suspension.
        #expect(driver.acknowledge(.didEnterBackground).steps == [])
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        #expect(driver.app.state == .terminated)
        #expect(driver.app.terminationReason?.code == .watchdog)
    }

    @Test("the foreground transitions have their own, longer watchdog", arguments: [
        AppEventKind.willResignActive, .willEnterForeground, .didBecomeActive,
    ])
    func foregroundTransitionWatchdog(_ kind: AppEventKind) {
        #expect(LifecycleTimings().watchdog(for: kind) == .seconds(10))
    }

    @Test("a kill ends all requests: nothing more is delivered before the process exits")
    func nothingAfterKill() {
        var driver = Driver.at(.active)
        driver.feed(.killRequested)
        #expect(driver.feed(.backgroundRequested).isRejected)
        #expect(driver.feed(.foregroundRequested).isRejected)
        #expect(driver.feed(.beginBackgroundTask(name: "late")).backgroundTaskID == 0)
        #expect(driver.feed(.killRequested).steps == [], "one kill per process")
    }
}

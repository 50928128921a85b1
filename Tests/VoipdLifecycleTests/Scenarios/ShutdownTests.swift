import Testing
import VoipdLifecycle
import VoipdVocabulary

/// When voipd stops, nothing may be left stopped.
@Suite("Daemon shutdown")
struct ShutdownTests {
    @Test("a suspended app is resumed and stays running")
    func resumesSuspended() {
        var driver = Driver.at(.suspended)
        let stop = driver.feed(.shutdown)
        #expect(stop.steps == [.resume, .transition(.suspended, .background)])
        #expect(LifecycleTimer.allCases.filter { $0 != .relaunchThrottle }.allSatisfy(stop.cancels))
        #expect(driver.phase == .background)
        #expect(driver.feed(.timerFired(.wakeBudget), after: .seconds(10)).steps == [])
    }

    @Test("an app on its way to the background is not suspended after the shutdown")
    func noLaterSuspension() {
        var driver = Driver.at(.active)
        driver.leaveForeground()
        driver.feed(.shutdown)
        #expect(!driver.acknowledge(.didEnterBackground).steps.contains(.suspend))
        #expect(!driver.feed(.endBackgroundTask(id: 99)).steps.contains(.suspend))
    }
}

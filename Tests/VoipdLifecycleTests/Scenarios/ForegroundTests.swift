import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Returning to the foreground, and interruptions that never leave it.
@Suite("Foreground and interruptions")
struct ForegroundTests {
    @Test("from suspended: resume, willEnterForeground (inactive), didBecomeActive (active)")
    func foregroundFromSuspended() {
        var driver = Driver.at(.suspended)
        let resume = driver.feed(.foregroundRequested, after: .seconds(60))
        #expect(resume.steps == [.resume, .disarm] + Steps.announce(.willEnterForeground, .suspended, .inactive))
        #expect(driver.app.state == .inactive)
        let active = driver.acknowledge(.willEnterForeground)
        #expect(active.steps == Steps.announce(.didBecomeActive, .inactive, .active))
        #expect(driver.acknowledge(.didBecomeActive).steps == [])
        #expect(driver.app.state == .active)
        #expect(driver.app.taskBudgetDeadline == nil, "no budget runs in the foreground")
    }

    @Test("an interruption: willResignActive then didBecomeActive, never didEnterBackground")
    func interruption() {
        var driver = Driver.at(.active)
        let begin = driver.feed(.interruptionBegan)
        #expect(begin.steps == Steps.announce(.willResignActive, .active, .inactive))
        #expect(driver.acknowledge(.willResignActive).steps == [])
        #expect(driver.app.state == .inactive)

        let end = driver.feed(.interruptionEnded, after: .seconds(20))
        #expect(end.steps == Steps.announce(.didBecomeActive, .inactive, .active))
        #expect(driver.acknowledge(.didBecomeActive).steps == [])
        #expect(driver.app.state == .active)
        #expect(!driver.app.interrupted)
    }

    @Test("an interruption that ends before willResignActive is acknowledged waits for the acknowledgement")
    func shortInterruption() {
        var driver = Driver.at(.active)
        driver.feed(.interruptionBegan)
        #expect(driver.feed(.interruptionEnded).delivered.isEmpty, "one event in flight at a time")
        #expect(driver.acknowledge(.willResignActive).deliveredKinds == [.didBecomeActive])
    }

    @Test("the user goes back to the app while it is leaving: didBecomeActive instead of didEnterBackground")
    func changeOfMindWhileLeaving() {
        var driver = Driver.at(.active)
        driver.feed(.backgroundRequested)
        #expect(driver.feed(.foregroundRequested).delivered.isEmpty)
        #expect(driver.acknowledge(.willResignActive).deliveredKinds == [.didBecomeActive])
        driver.acknowledge(.didBecomeActive)
        #expect(driver.app.state == .active)
    }

    @Test("sent to the background while interrupted: straight to didEnterBackground")
    func backgroundWhileInterrupted() {
        var driver = Driver.at(.inactive)
        #expect(driver.feed(.backgroundRequested).deliveredKinds == [.didEnterBackground])
        #expect(!driver.app.interrupted)
    }
}

import Testing
import VoipdLifecycle
import VoipdVocabulary

/// setKeepAliveTimeout:handler:, with iOS's 600 s floor.
@Suite("Keep-alive")
struct KeepAliveTests {
    @Test("an interval below the minimum is rejected")
    func belowMinimum() {
        var driver = Driver.at(.active)
        #expect(driver.feed(.setKeepAlive(.seconds(599))).isRejected)
        #expect(driver.app.keepAliveInterval == nil)
    }

    @Test("a policy's own minimum (a manifest's keepAliveMinimum) replaces the default, but never goes below keepAliveFloor")
    func policyMinimum() {
        var policy = AppPolicy.voipApp
        policy.keepAliveMinimum = .seconds(90)
        var driver = Driver.at(.active, policy: policy)
        #expect(driver.app.keepAliveMinimum == .seconds(90))
        #expect(driver.feed(.setKeepAlive(.seconds(89))).isRejected)
        #expect(!driver.feed(.setKeepAlive(.seconds(90))).isRejected)
        #expect(driver.app.keepAliveInterval == .seconds(90))

        policy.keepAliveMinimum = .seconds(1)
        driver = Driver.at(.active, policy: policy)
        #expect(driver.app.keepAliveMinimum == .seconds(60), "the floor")
        #expect(driver.feed(.setKeepAlive(.seconds(59))).isRejected)
        #expect(!driver.feed(.setKeepAlive(.seconds(60))).isRejected)
    }

    @Test("a keep-alive set below a minimum the policy raises later is raised to it, its timer counted from then; a lower minimum leaves it alone")
    func raisedMinimum() {
        var policy = AppPolicy.voipApp
        policy.keepAliveMinimum = .seconds(90)
        var driver = Driver.at(.active, policy: policy)
        #expect(!driver.feed(.setKeepAlive(.seconds(90))).isRejected)
        driver.suspend()
        policy.keepAliveMinimum = .seconds(300)
        let raised = driver.feed(.policyChanged(policy), after: .seconds(30))
        #expect(driver.app.keepAliveInterval == .seconds(300))
        #expect(raised.startDelay(of: .keepAlive) == .seconds(300))
        policy.keepAliveMinimum = .seconds(60)
        #expect(driver.feed(.policyChanged(policy)).startDelay(of: .keepAlive) == nil)
        #expect(driver.app.keepAliveInterval == .seconds(300))
        // With its own minimum gone, the timings' default (600 s) is the minimum.
        policy.keepAliveMinimum = nil
        #expect(driver.feed(.policyChanged(policy)).startDelay(of: .keepAlive) == .seconds(600))
        #expect(driver.app.keepAliveInterval == .seconds(600))
    }

    /// Found by Tests/Fuzz: with keepAliveMinimum at 0 a zero interval was accepted, and the
    /// timer fired again at once, forever.
    @Test("a zero interval is rejected, even with no minimum")
    func zeroInterval() {
        var timings = LifecycleTimings()
        timings.keepAliveMinimum = .zero
        var driver = Driver.at(.active, timings: timings)
        #expect(driver.feed(.setKeepAlive(.zero)).isRejected)
        #expect(driver.app.keepAliveInterval == nil)
        #expect(!driver.feed(.setKeepAlive(.milliseconds(1))).isRejected)
    }

    @Test("the timer resumes a suspended app with a keepAlive event, again every interval")
    func periodicWake() {
        var driver = Driver.at(.active)
        #expect(driver.feed(.setKeepAlive(.seconds(600))).startDelay(of: .keepAlive) == .seconds(600))
        driver.suspend()
        for round in 1...3 {
            let fire = driver.feed(.timerFired(.keepAlive), after: .seconds(600))
            #expect(fire.steps == [.start(.keepAlive)] + Steps.wake(from: .suspended) + [.deliver(.keepAlive)])
            #expect(fire.startDelay(of: .keepAlive) == .seconds(600), "re-armed for the next interval")
            #expect(driver.acknowledge(.keepAlive, after: .seconds(2)).steps == [.arm, .suspend])
            driver.feed(.stopConfirmed)
            #expect(driver.app.wakeCount == round)
        }
    }

    @Test("in the foreground the timer is only re-armed")
    func foreground() {
        var driver = Driver.at(.active, keepAlive: .seconds(900))
        #expect(driver.feed(.timerFired(.keepAlive), after: .seconds(900)).steps == [.start(.keepAlive)])
        #expect(driver.app.wakeCount == 0)
    }

    @Test("cleared, the keep-alive wakes nothing")
    func cleared() {
        var driver = Driver.at(.active, keepAlive: .seconds(600))
        #expect(driver.feed(.setKeepAlive(nil)).cancels(.keepAlive))
        driver.suspend()
        #expect(driver.feed(.timerFired(.keepAlive), after: .seconds(600)).steps == [])
    }

    /// Found by Tests/Fuzz: each interval queued another keepAlive behind the unanswered one,
    /// without bound.
    @Test("a keepAlive still unanswered when the next interval ends is not sent twice")
    func unansweredKeepAlive() {
        var driver = Driver.at(.background, keepAlive: .seconds(600))
        #expect(driver.feed(.timerFired(.keepAlive), after: .seconds(600)).deliveredKinds == [.keepAlive])
        #expect(driver.feed(.timerFired(.keepAlive), after: .seconds(600)).steps == [.start(.keepAlive)])
        #expect(driver.app.outbox.isEmpty)
        #expect(driver.acknowledge(.keepAlive).deliveredKinds == [])
    }

    @Test("a keep-alive wake that is not handled in time is suspended by the wake budget")
    func wakeBudget() {
        var driver = Driver.at(.suspended, keepAlive: .seconds(600))
        driver.feed(.timerFired(.keepAlive), after: .seconds(600))
        #expect(driver.feed(.timerFired(.wakeBudget), after: .seconds(10)).steps == [.arm, .suspend])
    }
}

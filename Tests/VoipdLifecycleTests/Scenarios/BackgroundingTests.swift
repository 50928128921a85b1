import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Leaving the foreground in UIKit's order, suspension, and wakes by data.
@Suite("Backgrounding and wakes")
struct BackgroundingTests {
    @Test("launch → willResignActive → didEnterBackground → suspend → suspended")
    func launchToSuspended() {
        var driver = Driver()
        let launch = driver.feed(.launched(inBackground: false, reason: "user"))
        #expect(driver.app.state == .active)
        #expect(driver.app.connection == .awaiting)
        #expect(launch.startDelay(of: .connect) == driver.timings.connectTimeout)
        #expect(driver.feed(.connected).cancels(.connect))

        let resign = driver.feed(.backgroundRequested)
        #expect(resign.steps == Steps.announce(.willResignActive, .active, .inactive))
        #expect(resign.startDelay(of: .acknowledgement) == driver.timings.foregroundTransitionWatchdog)
        #expect(driver.app.state == .inactive)

        let enter = driver.acknowledge(.willResignActive)
        #expect(enter.steps == Steps.announce(.didEnterBackground, .inactive, .background) + Steps.taskBudget)
        #expect(enter.startDelay(of: .acknowledgement) == .seconds(5))
        #expect(driver.app.state == .background)

        let stop = driver.acknowledge(.didEnterBackground)
        #expect(stop.steps == [.arm, .suspend])
        #expect(driver.phase == .suspending)
        #expect(driver.app.state == .background, "publicly background until the stop is confirmed")

        #expect(driver.feed(.stopConfirmed).steps == [.arm, .transition(.background, .suspended), .start(.hibernate)])
        #expect(driver.app.state == .suspended)
    }

    @Test("data wakes a suspended app: resume, disarm, voipSocketReadable; acknowledged, it is suspended again")
    func dataWakesAndResuspends() {
        var driver = Driver.at(.suspended)
        let wake = driver.feed(.socketReady(sipData), after: .seconds(60))
        #expect(wake.steps == Steps.wake(from: .suspended) + [.deliver(.voipSocketReadable)])
        #expect(wake.delivered.first?.socket == sipData)
        #expect(wake.startDelay(of: .wakeBudget) == driver.timings.wakeBudget)
        #expect(wake.startDelay(of: .acknowledgement) == nil, "a wake is governed by its budget, not the watchdog")
        #expect(driver.app.state == .background)
        #expect(driver.app.wakeCount == 1)

        let done = driver.acknowledge(.voipSocketReadable, after: .seconds(1))
        #expect(done.steps == [.arm, .suspend])
        #expect(done.cancels(.wakeBudget))
        driver.feed(.stopConfirmed)
        #expect(driver.app.state == .suspended)
    }

    @Test("data arriving after the stop was sent but before it was confirmed still wakes the app")
    func dataWhileSuspending() {
        var driver = Driver.at(.suspending)
        let wake = driver.feed(.socketReady(sipData))
        #expect(wake.steps == Steps.wake(from: .background) + [.deliver(.voipSocketReadable)])
        #expect(driver.phase == .background)
        // The confirmation of the earlier stop comes late: the app runs, so it is ignored.
        #expect(driver.feed(.stopConfirmed).steps == [])
        #expect(driver.phase == .background)
        #expect(driver.acknowledge(.voipSocketReadable).steps == [.arm, .suspend])
    }

    @Test("two sockets ready at one stop: the app is woken and told of the first; the second, passed over, is not marked as told")
    func secondReadinessAtOneStop() {
        // The daemon offers every socket with something new when it arms; the first wakes the
        // app, and the second finds it running. Marked as told, what waits on the second
        // would never wake the app again.
        var driver = Driver.at(.suspending)
        let other = SocketReadiness(name: "sip-in-2", bytesAvailable: 8, peerClosed: false)
        let first = driver.feed(.socketReady(sipData))
        #expect(first.actions.contains(.markReported(sipData)))
        #expect(first.delivered.first?.socket == sipData)
        let second = driver.feed(.socketReady(other))
        #expect(second.steps == [], "the app runs and reads its sockets itself")
        #expect(!second.actions.contains(.markReported(other)))
        #expect(driver.acknowledge(.voipSocketReadable).steps == [.arm, .suspend])
        // Offered again at that stop, it wakes the app, and now it is told.
        let again = driver.feed(.socketReady(other))
        #expect(again.actions.contains(.markReported(other)))
        #expect(again.delivered.first?.socket == other)
    }

    @Test("a socket registered as the stop took hold is watched like the others")
    func socketAddedWhileStopped() {
        // The app sent its registration just before the stop, and waits for the reply; voipd
        // confirms the stop (a freeze, or a process that is not its child, is looked at at
        // once) before it reads the request. Unwatched, what arrives on it would never wake
        // the app.
        for phase in [LifecyclePhase.suspending, .suspended] {
            var driver = Driver.at(phase)
            #expect(driver.feed(.heldSocketsChanged(2)).steps == [.arm], "\(phase)")
            #expect(driver.feed(.heldSocketsChanged(1)).steps == [], "one let go leaves the others as they were")
        }
    }

    @Test("a wake that is not acknowledged is suspended when its budget is spent")
    func wakeBudgetSpent() {
        var driver = Driver.at(.suspended)
        driver.feed(.socketReady(sipData))
        let spent = driver.feed(.timerFired(.wakeBudget), after: driver.timings.wakeBudget)
        #expect(spent.steps == [.arm, .suspend])
        driver.feed(.stopConfirmed)
        #expect(driver.app.state == .suspended)
    }

    @Test("after a wake that was never acknowledged, the next wake and the foreground are not held back")
    func unacknowledgedWakeHoldsNothingBack() {
        var driver = Driver.at(.suspended)
        driver.feed(.socketReady(sipData))
        driver.feed(.timerFired(.wakeBudget), after: driver.timings.wakeBudget)
        driver.feed(.stopConfirmed)

        var again = driver
        let wake = again.feed(.socketReady(sipData), after: .seconds(30))
        #expect(wake.deliveredKinds == [.voipSocketReadable])

        let foreground = driver.feed(.foregroundRequested, after: .seconds(30))
        #expect(foreground.steps == Steps.enterForeground(from: .suspended, stopped: true, connected: true))
        driver.acknowledge(.willEnterForeground)
        #expect(driver.app.state == .active)
    }

    /// Found by Tests/Fuzz: the new policy took effect only with the next input, whatever it
    /// was (a refused setKeepAlive suspended the app).
    @Test("an app no longer allowed to run in the background is suspended when its policy changes")
    func policyNoLongerRunsInBackground() {
        var driver = Driver.at(.active, policy: AppPolicy(canLaunch: true, runsInBackground: true))
        driver.enterBackground()
        #expect(driver.phase == .background, "an audio app keeps running")
        #expect(driver.setPolicy(.voipApp).steps == [.arm, .suspend])
        #expect(driver.phase == .suspending)
    }
}

/// Issue 10, part 5: a launched app's steps wait for its hello.
@Suite("Backgrounding before the hello")
struct BackgroundBeforeHelloTests {
    @Test("sent to the background before it connected: nothing moves until it does; then willResignActive")
    func waitsForHello() {
        var driver = Driver(policy: .voipApp, timings: LifecycleTimings())
        driver.feed(.launched(inBackground: false, reason: "test"))
        #expect(driver.app.connection == .awaiting)
        #expect(driver.feed(.backgroundRequested).steps == [])
        #expect(driver.app.state == .active, "not stopped before it could register anything")
        let hello = driver.feed(.connected)
        #expect(hello.deliveredKinds == [.willResignActive])
    }

    @Test("it never connects: after connectTimeout the steps go ahead untold, and it is suspended")
    func connectTimeout() {
        var driver = Driver(policy: .voipApp, timings: LifecycleTimings())
        driver.feed(.launched(inBackground: false, reason: "test"))
        driver.feed(.backgroundRequested)
        let timeout = driver.feed(.timerFired(.connect), after: driver.timings.connectTimeout)
        #expect(timeout.steps.contains(.suspend))
        #expect(timeout.deliveredKinds.isEmpty)
    }
}

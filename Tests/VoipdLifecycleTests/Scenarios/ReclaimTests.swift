import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Reclaiming a suspended app's ordinary sockets (TN2277: the screen locks).
@Suite("Socket reclaim")
struct ReclaimTests {
    @Test("locking the screen reclaims a suspended app's sockets")
    func lockWhileSuspended() {
        var driver = Driver.at(.suspended)
        #expect(driver.feed(.screenLocked).steps == [.reclaim])
        #expect(driver.app.locked)
    }

    @Test("an app suspended while the screen is locked is reclaimed when the stop is confirmed")
    func suspendedWhileLocked() {
        var driver = Driver.at(.active)
        #expect(driver.feed(.screenLocked).steps == [])
        driver.enterBackground()
        #expect(driver.feed(.stopConfirmed).steps == [.arm, .transition(.background, .suspended), .reclaim, .start(.hibernate)])
    }

    @Test("after the screen is unlocked, a suspension reclaims nothing")
    func unlocked() {
        var driver = Driver.at(.active)
        driver.feed(.screenLocked)
        driver.feed(.screenUnlocked)
        driver.enterBackground()
        #expect(driver.feed(.stopConfirmed).steps == [.arm, .transition(.background, .suspended), .start(.hibernate)])
    }

    @Test("reclaim is for suspended apps only", arguments: [LifecyclePhase.active, .inactive, .background, .suspending])
    func reclaimRejected(_ phase: LifecyclePhase) {
        var driver = Driver.at(phase)
        #expect(driver.feed(.reclaimRequested).isRejected)
    }

    @Test("with reclaimAfterSuspension set, a long suspension reclaims; a wake cancels it")
    func reclaimAfterSuspension() {
        var timings = LifecycleTimings()
        timings.reclaimAfterSuspension = .seconds(120)
        var driver = Driver.at(.suspending, timings: timings)
        let stop = driver.feed(.stopConfirmed)
        #expect(stop.startDelay(of: .reclaim) == .seconds(120))
        #expect(driver.feed(.timerFired(.reclaim), after: .seconds(120)).steps == [.reclaim])
        #expect(driver.feed(.socketReady(sipData)).cancels(.reclaim))
    }
}

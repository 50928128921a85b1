import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Hibernation (seed 004): a suspended app whose memory is paged out. To the lifecycle it is
/// a kind of suspended: it asks the daemon to hibernate the app and nothing else changes.
@Suite("Hibernation")
struct HibernationTests {
    @Test("the confirmed stop starts the hibernate timer; when it fires, the app is hibernated and stays suspended")
    func timer() {
        var driver = Driver.at(.suspending)
        let stop = driver.feed(.stopConfirmed)
        #expect(stop.startDelay(of: .hibernate) == .seconds(60))
        let fired = driver.feed(.timerFired(.hibernate), after: .seconds(60))
        #expect(fired.steps == [.hibernate])
        #expect(fired.actions.contains(.hibernate(requested: false, reason: "suspended for 60.0 s")))
        #expect(driver.phase == .suspended)
    }

    @Test("hibernateAfterSuspension nil: a stop starts no hibernate timer")
    func never() {
        var timings = LifecycleTimings()
        timings.hibernateAfterSuspension = nil
        var driver = Driver.at(.suspending, timings: timings)
        #expect(driver.feed(.stopConfirmed).startDelay(of: .hibernate) == nil)
    }

    @Test("a wake, a keep-alive and the foreground cancel the timer", arguments: [
        LifecycleInput.socketReady(sipData), .timerFired(.keepAlive), .foregroundRequested,
    ])
    func resumeCancels(_ input: LifecycleInput) {
        var driver = Driver.at(.suspended, keepAlive: .seconds(600))
        let resumed = driver.feed(input)
        #expect(resumed.steps.contains(.resume))
        #expect(resumed.cancels(.hibernate))
    }

    @Test("a hibernated app is woken, kept alive, terminated and relaunched exactly as a suspended one")
    func aKindOfSuspended() {
        var plain = Driver.at(.suspended, keepAlive: .seconds(600))
        var hibernated = Driver.at(.suspended, keepAlive: .seconds(600))
        #expect(hibernated.feed(.hibernateRequested).steps == [.hibernate])
        #expect(hibernated.phase == .suspended && hibernated.app.state == .suspended)
        for input: LifecycleInput in [.timerFired(.keepAlive), .socketReady(sipData), .processExited(.signaled(signal: 9, name: "SIGKILL")),
                                      .socketReady(sipData)] {
            #expect(hibernated.feed(input).actions == plain.feed(input).actions, "\(input)")
            #expect(hibernated.phase == plain.phase, "\(input)")
        }
    }

    @Test("only a confirmed stop is hibernated", arguments: [LifecyclePhase.notRunning, .active, .inactive, .background, .suspending, .terminated])
    func refused(_ phase: LifecyclePhase) {
        var driver = Driver.at(phase)
        let outcome = driver.feed(.hibernateRequested)
        #expect(outcome.isRejected)
        #expect(outcome.actions.isEmpty)
    }

    @Test("an app being ended is not hibernated, by request or by the timer")
    func terminating() {
        var driver = Driver.at(.suspended)
        driver.feed(.terminateRequested)
        #expect(driver.feed(.hibernateRequested).isRejected)
        #expect(driver.feed(.timerFired(.hibernate)).steps == [])
    }
}

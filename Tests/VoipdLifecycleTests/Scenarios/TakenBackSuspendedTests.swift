import Testing
import VoipdLifecycle
import VoipdVocabulary

/// A process an earlier voipd left frozen, supervised again by the next voipd without being
/// run: suspended as it was, woken by data on its held sockets, told once it connects again.
@Suite("Taken back suspended")
struct TakenBackSuspendedTests {
    @Test("taken back suspended: no launch counted, sockets armed; data wakes it, the connection it makes then gets the event, and it is suspended again")
    func wokenAndConnects() {
        var driver = Driver()
        let taken = driver.feed(.takenBackSuspended(reason: "found frozen", keepAlive: nil))
        #expect(taken.steps == [.transition(.notRunning, .suspended), .arm, .start(.hibernate)])
        #expect(driver.app.launchCount == 0)
        #expect(driver.app.connection == .awaiting)
        #expect(driver.app.resumesOnSocketReady)

        // The wake resumes it and waits for its connection, as long as a launched app's.
        let wake = driver.feed(.socketReady(sipData), after: .seconds(30))
        #expect(wake.steps == [.resume, .disarm, .start(.wakeBudget), .start(.connect)]
                + Array(Steps.wake(from: .suspended).dropFirst(3)))
        #expect(wake.delivered.isEmpty, "nobody to tell yet")
        #expect(driver.feed(.connected).delivered.map(\.kind) == [.voipSocketReadable])
        let handled = driver.acknowledge(.voipSocketReadable)
        #expect(handled.steps.suffix(2) == Steps.suspend)
        #expect(driver.phase == .suspending)
    }

    @Test("woken, it never connects: after connectTimeout it is a program that does not speak the protocol, suspended once its wake budget is over")
    func wokenNeverConnects() {
        var driver = Driver()
        driver.feed(.takenBackSuspended(reason: "found frozen", keepAlive: nil))
        driver.feed(.socketReady(sipData))
        driver.feed(.timerFired(.connect), after: driver.timings.connectTimeout)
        #expect(driver.app.connection == .none)
        #expect(driver.feed(.timerFired(.wakeBudget), after: driver.timings.wakeBudget - driver.timings.connectTimeout).steps
                .suffix(2) == Steps.suspend)
    }

    @Test("taken back with the keep-alive the dead voipd recorded: its timer runs again, due when it was; it wakes the app, whose connection then gets the keepAlive")
    func keepAliveGoesOn() {
        var driver = Driver()
        let due = driver.now + .seconds(200)
        let taken = driver.feed(.takenBackSuspended(reason: "found frozen", keepAlive: RecordedKeepAlive(interval: .seconds(900), due: due)))
        #expect(taken.actions.contains(.startTimer(.keepAlive, after: .seconds(200))), "\(taken.actions)")
        #expect(driver.app.keepAliveInterval == .seconds(900))

        let fired = driver.feed(.timerFired(.keepAlive), after: .seconds(200))
        #expect(fired.actions.contains(.resume) && fired.actions.contains(.startTimer(.keepAlive, after: .seconds(900))), "\(fired.actions)")
        #expect(fired.delivered.isEmpty, "nobody to tell yet")
        #expect(driver.feed(.connected).delivered.map(\.kind) == [.keepAlive])
    }

    @Test("a recorded keep-alive whose instant passed while no voipd ran, or is not known, is owed at once; one further than its interval comes within it; one below this voipd's minimum is raised to it",
          arguments: [(-30, 0), (0, 0), (5000, 600), (nil, 0)] as [(Int?, Int)])
    func keepAliveDueAtOnce(dueIn: Int?, expected: Int) {
        var driver = Driver()
        let due = dueIn.map { dueIn in driver.now + .seconds(dueIn) }
        let taken = driver.feed(.takenBackSuspended(reason: "found frozen", keepAlive: RecordedKeepAlive(interval: .seconds(60), due: due)))
        #expect(driver.app.keepAliveInterval == driver.app.keepAliveMinimum, "raised to the minimum")
        #expect(taken.actions.contains(.startTimer(.keepAlive, after: .seconds(expected))), "\(taken.actions)")
    }

    @Test("only a process that is not running can be taken back")
    func rejectedWhileRunning() {
        var driver = Driver.at(.background)
        #expect(driver.feed(.takenBackSuspended(reason: "found frozen", keepAlive: nil)).isRejected)
        #expect(driver.phase == .background)
    }
}

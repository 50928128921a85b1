import Foundation
import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Programs adopted without their cooperation (issue 15): they cannot say when they have
/// finished, so in the background they run until their supervisor measures them quiet.
@Suite("Adopted programs: suspended when quiet")
struct AdoptedProgramTests {
    @Test("backgrounded, it keeps running until measured quiet; then it is stopped with its sockets armed")
    func backgroundedThenQuiet() {
        var driver = Driver.at(.active, policy: .adoptedApp)
        let leave = driver.feed(.backgroundRequested)
        #expect(leave.delivered.isEmpty)
        #expect(leave.steps == [.transition(.active, .inactive), .transition(.inactive, .background)] + Steps.taskBudget)
        #expect(driver.phase == .background)

        let quiet = driver.feed(.quietMeasured, after: .seconds(5))
        #expect(quiet.steps == [.arm, .suspend])
        #expect(quiet.actions.firstIndex(of: .markSockets).map { $0 < quiet.actions.firstIndex(of: .armSockets)! } == true,
                "what it read while running is handled: marked before the sockets are armed")
        #expect(driver.phase == .suspending)
        driver.feed(.stopConfirmed)
        #expect(driver.app.state == .suspended)
    }

    @Test("woken by data, it outlives its wake budget (a call) and is suspended once quiet")
    func wakeLastsUntilQuiet() {
        var driver = Driver.at(.suspended, policy: .adoptedApp)
        let wake = driver.feed(.socketReady(sipData), after: .seconds(60))
        #expect(wake.steps == Steps.wake(from: .suspended))
        #expect(!wake.actions.contains(.markSockets), "no mark on the wake path: the one before its next stop covers it")
        let spent = driver.feed(.timerFired(.wakeBudget), after: driver.timings.wakeBudget)
        #expect(spent.steps == [], "a call keeps it running past the wake budget")
        #expect(driver.phase == .background)
        #expect(driver.feed(.quietMeasured, after: .seconds(60)).steps == [.arm, .suspend])
        #expect(driver.app.wakeCount == 1)
    }

    @Test("measured quiet before its wake budget is spent, it is suspended at once")
    func quietEndsTheWakeEarly() {
        var driver = Driver.at(.suspended, policy: .adoptedApp)
        driver.feed(.socketReady(sipData))
        let quiet = driver.feed(.quietMeasured, after: .seconds(1))
        #expect(quiet.steps == [.arm, .suspend])
        #expect(quiet.cancels(.wakeBudget))
        #expect(driver.phase == .suspending)
        // The budget's timer, if it still fires, finds nothing to do.
        #expect(driver.feed(.timerFired(.wakeBudget), after: .seconds(9)).steps == [])
    }

    @Test("quiet means nothing in the foreground, while stopped, or while it is ending")
    func quietOnlyInTheBackground() {
        for phase in [LifecyclePhase.active, .inactive, .suspending, .suspended, .notRunning, .terminated] {
            var driver = Driver.at(phase, policy: .adoptedApp)
            #expect(driver.feed(.quietMeasured).steps == [], "\(phase)")
            #expect(driver.phase == phase)
        }
        var ending = Driver.at(.active, policy: .adoptedApp)
        ending.feed(.backgroundRequested)
        ending.feed(.terminateRequested)
        #expect(!ending.feed(.quietMeasured).steps.contains(.suspend), "a terminating program is not stopped")
    }

    @Test("keep-alive: resumed at its interval, suspended again when quiet, whatever the wake budget")
    func keepAliveUntilQuiet() {
        var driver = Driver.at(.suspended, policy: .adoptedApp, keepAlive: .seconds(600))
        let wake = driver.feed(.timerFired(.keepAlive), after: .seconds(600))
        #expect(wake.steps.contains(.resume))
        #expect(driver.phase == .background)
        #expect(driver.feed(.timerFired(.wakeBudget), after: driver.timings.wakeBudget).steps == [])
        #expect(driver.feed(.quietMeasured, after: .seconds(1)).steps == [.arm, .suspend])
    }

    @Test("no longer adopted (its manifest changed): suspended at the next input, as a silent program is")
    func policyChangedToSilent() {
        var driver = Driver.at(.active, policy: .adoptedApp)
        driver.feed(.backgroundRequested)
        #expect(driver.phase == .background)
        let changed = driver.feed(.policyChanged(.silentApp))
        #expect(changed.steps == [.arm, .suspend])
    }

    @Test("a policy written before suspendsWhenQuiet existed loads with it off; written and read back, it keeps it")
    func policyFromAnOlderFile() throws {
        let old = #"{"exitsOnSuspend":false,"canLaunch":true,"relaunchOnData":true,"runsInBackground":false,"speaksProtocol":false}"#
        let loaded = try JSONDecoder().decode(AppPolicy.self, from: Data(old.utf8))
        #expect(loaded == AppPolicy(canLaunch: true, speaksProtocol: false))
        #expect(try JSONDecoder().decode(AppPolicy.self, from: Data("{}".utf8)) == AppPolicy())
        let adopted = AppPolicy.adoptedApp
        #expect(try JSONDecoder().decode(AppPolicy.self, from: JSONEncoder().encode(adopted)) == adopted)
    }
}

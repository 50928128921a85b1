import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Apps without a control connection: their events count as acknowledged at once, but a
/// wake still gets its whole budget.
@Suite("Apps without a control connection")
struct NoConnectionTests {
    @Test("a program that does not speak the protocol is backgrounded and suspended without being told")
    func silentBackgrounding() {
        var driver = Driver.at(.active, policy: .silentApp)
        #expect(driver.app.connection == .none)
        let leave = driver.feed(.backgroundRequested)
        #expect(leave.delivered.isEmpty)
        #expect(leave.steps == [.transition(.active, .inactive), .transition(.inactive, .background)]
            + Steps.taskBudget + [.arm, .suspend])
    }

    @Test("woken without a connection, it keeps the whole wake budget before being suspended")
    func silentWake() {
        var driver = Driver.at(.suspended, policy: .silentApp)
        let wake = driver.feed(.socketReady(sipData))
        #expect(wake.steps == Steps.wake(from: .suspended))
        #expect(driver.app.wakeCount == 1)
        #expect(driver.phase == .background)
        #expect(driver.feed(.timerFired(.wakeBudget), after: .seconds(10)).steps == [.arm, .suspend])
    }

    @Test("disconnected before a wake: the same as never connected")
    func disconnectedThenWoken() {
        var driver = Driver.at(.suspended)
        driver.feed(.disconnected)
        #expect(driver.feed(.socketReady(sipData)).delivered.isEmpty)
        #expect(driver.phase == .background)
        #expect(driver.feed(.timerFired(.wakeBudget), after: .seconds(10)).steps == [.arm, .suspend])
    }

    @Test("disconnected while the wake event is in flight: it still has the rest of its wake budget")
    func disconnectedDuringWake() {
        var driver = Driver.at(.suspended)
        driver.feed(.socketReady(sipData))
        let gone = driver.feed(.disconnected, after: .seconds(1))
        #expect(!gone.steps.contains(.suspend))
        #expect(driver.phase == .background)
        #expect(driver.app.inFlight == nil)
        #expect(driver.feed(.timerFired(.wakeBudget), after: .seconds(9)).steps == [.arm, .suspend])
    }

    @Test("disconnected while a transition is in flight: it counts as acknowledged and the walk goes on")
    func disconnectedDuringTransition() {
        var driver = Driver.at(.active)
        driver.feed(.backgroundRequested)
        let gone = driver.feed(.disconnected)
        #expect(gone.steps == [.transition(.inactive, .background)] + Steps.taskBudget + [.arm, .suspend])
    }

    @Test("connect timeout: the relaunched app's events are no longer waited for, and it keeps its wake budget")
    func connectTimeout() {
        var driver = Driver.at(.terminated)
        driver.feed(.socketReady(sipData))
        let launched = driver.feed(.launched(inBackground: true, reason: "data"))
        #expect(launched.startDelay(of: .connect) == driver.timings.connectTimeout)
        let timeout = driver.feed(.timerFired(.connect), after: driver.timings.connectTimeout)
        #expect(timeout.delivered.isEmpty)
        #expect(driver.app.connection == .none)
        #expect(driver.app.wakeCount == 1, "the event counts as sent")
        #expect(driver.phase == .background)
        #expect(driver.feed(.timerFired(.wakeBudget)).steps == [.arm, .suspend])
    }

    @Test("an app that connects late, after the timeout, is waited for again")
    func lateConnect() {
        var driver = Driver(policy: .voipApp)
        driver.feed(.launched(inBackground: false, reason: "user"))
        driver.feed(.timerFired(.connect), after: .seconds(10))
        driver.feed(.connected, after: .seconds(1))
        #expect(driver.feed(.backgroundRequested).deliveredKinds == [.willResignActive])
    }

    @Test("a changed speaksProtocol takes effect at the next launch", arguments: [false, true])
    func policyChange(_ speaks: Bool) {
        var driver = Driver.at(.terminated, policy: AppPolicy(canLaunch: true, speaksProtocol: !speaks))
        driver.setPolicy(AppPolicy(canLaunch: true, speaksProtocol: speaks))
        driver.feed(.launched(inBackground: false, reason: "relaunch"))
        #expect(driver.app.connection == (speaks ? .awaiting : .none))
    }
}

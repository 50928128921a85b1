import Testing
import VoipdLifecycle
import VoipdVocabulary

/// willTerminate, force quit, exits-on-suspend, and the reason recorded for each.
@Suite("Termination")
struct TerminationTests {
    @Test("exitsOnSuspend: willTerminate instead of the stop; acknowledged, kill(exitsOnSuspend)")
    func exitsOnSuspend() {
        var driver = Driver.at(.active, policy: AppPolicy(exitsOnSuspend: true, canLaunch: true))
        driver.leaveForeground()
        let instead = driver.acknowledge(.didEnterBackground)
        #expect(instead.steps == [.start(.exitGrace), .deliver(.willTerminate), .start(.acknowledgement)])
        #expect(instead.startDelay(of: .exitGrace) == driver.timings.willTerminateWatchdog + driver.timings.terminationGrace)
        #expect(driver.acknowledge(.willTerminate).steps == [.kill(.exitsOnSuspend)])
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        #expect(driver.app.terminationReason?.code == .exitsOnSuspend)
    }

    /// Found by Tests/Fuzz: willTerminate was sent while the wake's event was unanswered.
    @Test("exitsOnSuspend, relaunched for data: at the end of the wake budget willTerminate waits for the event in flight")
    func exitsOnSuspendAfterWake() {
        var driver = Driver(policy: AppPolicy(exitsOnSuspend: true, canLaunch: true))
        driver.feed(.heldSocketsChanged(1))
        #expect(driver.feed(.socketReady(sipData)).steps == [.launch(inBackground: true)])
        driver.feed(.launched(inBackground: true, reason: "data"))
        driver.feed(.connected)
        #expect(driver.app.inFlight?.kind == .voipSocketReadable)
        let budgetSpent = driver.feed(.timerFired(.wakeBudget), after: driver.timings.wakeBudget)
        #expect(budgetSpent.deliveredKinds == [])
        #expect(budgetSpent.steps.contains(.start(.exitGrace)), "the termination's overall deadline runs")
        #expect(driver.app.inFlight?.kind == .voipSocketReadable)
        #expect(driver.acknowledge(.voipSocketReadable).deliveredKinds == [.willTerminate])
        #expect(driver.acknowledge(.willTerminate).steps == [.kill(.exitsOnSuspend)])
    }

    @Test("exitsOnSuspend without a connection: SIGTERM, then SIGKILL after the grace")
    func exitsOnSuspendSilently() {
        var driver = Driver.at(.active, policy: AppPolicy(exitsOnSuspend: true, canLaunch: true, speaksProtocol: false))
        let instead = driver.feed(.backgroundRequested)
        #expect(instead.steps.suffix(2) == [.requestExit, .start(.exitGrace)])
        #expect(!instead.steps.contains(.suspend))
        #expect(driver.feed(.timerFired(.exitGrace), after: .seconds(5)).steps == [.kill(.exitsOnSuspend)])
    }

    @Test("a stop that fails: the app is continued and ended as one that exits on suspend (suspendFailed); data on its held socket relaunches it")
    func stopFailed() {
        var driver = Driver.at(.suspending)
        let failed = driver.feed(.stopFailed("kill(-42, SIGSTOP): Operation not permitted"))
        #expect(failed.steps == [.resume, .disarm, .start(.exitGrace), .deliver(.willTerminate), .start(.acknowledgement)])
        #expect(driver.phase == .background)
        #expect(driver.feed(.stopConfirmed).steps == [], "no stop is awaited any more")
        #expect(driver.feed(.backgroundRequested).isRejected, "terminating")
        #expect(driver.acknowledge(.willTerminate).steps == [.kill(.suspendFailed)])
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        #expect(driver.app.terminationReason?.code == .suspendFailed)
        #expect(driver.feed(.socketReady(sipData)).steps.contains(.launch(inBackground: true)), "not ended by choice")
    }

    @Test("terminating a running app: willTerminate, then the kill on its acknowledgement")
    func terminateRunning() {
        var driver = Driver.at(.active)
        let terminate = driver.feed(.terminateRequested)
        #expect(terminate.deliveredKinds == [.willTerminate])
        #expect(driver.feed(.foregroundRequested).isRejected, "terminating")
        #expect(driver.acknowledge(.willTerminate).steps == [.kill(.terminated)])
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        #expect(driver.app.terminationReason?.code == .terminated)
    }

    @Test("an app that exits by itself on willTerminate is recorded as terminated")
    func exitsOnWillTerminate() {
        var driver = Driver.at(.background)
        driver.feed(.terminateRequested)
        driver.feed(.processExited(.exited(code: 0)), after: .seconds(1))
        #expect(driver.app.terminationReason?.code == .terminated)
    }

    @Test("willTerminate not acknowledged in time: the kill follows anyway")
    func willTerminateWatchdog() {
        var driver = Driver.at(.active)
        #expect(driver.feed(.terminateRequested).startDelay(of: .acknowledgement) == driver.timings.willTerminateWatchdog)
        #expect(driver.feed(.timerFired(.acknowledgement), after: .seconds(5)).steps == [.kill(.terminated)])
    }

    @Test("willTerminate waits for the event in flight")
    func willTerminateQueues() {
        var driver = Driver.at(.active)
        driver.feed(.backgroundRequested)
        #expect(driver.feed(.terminateRequested).delivered.isEmpty)
        #expect(driver.acknowledge(.willResignActive).deliveredKinds == [.willTerminate])
    }

    @Test("terminating a suspended app kills it without willTerminate (seed 002)")
    func terminateSuspended() {
        var driver = Driver.at(.suspended)
        #expect(driver.feed(.terminateRequested).steps == [.kill(.terminated)])
    }

    @Test("kill is a force quit: SIGKILL, no willTerminate", arguments: [LifecyclePhase.active, .background, .suspended])
    func forceQuit(_ phase: LifecyclePhase) {
        var driver = Driver.at(phase)
        #expect(driver.feed(.killRequested).steps == [.kill(.forceQuit)])
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        #expect(driver.app.terminationReason?.code == .forceQuit)
        #expect(driver.app.state == .terminated)
    }

    @Test("the first kill's reason is the one recorded")
    func firstKillWins() {
        var driver = Driver.at(.suspended)
        driver.feed(.memoryPressureKill)
        #expect(driver.feed(.killRequested).steps == [])
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        #expect(driver.app.terminationReason?.code == .memoryPressure)
    }
}

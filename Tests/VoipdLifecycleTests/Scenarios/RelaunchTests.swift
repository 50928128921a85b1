import Testing
import VoipdLifecycle
import VoipdVocabulary

/// Held sockets outlive the process: data relaunches a dead app in the background.
@Suite("Relaunch on data")
struct RelaunchTests {
    @Test("exit while suspended → sockets armed; data → launch(inBackground); voipSocketReadable only once connected")
    func relaunchOnData() throws {
        var driver = Driver.at(.suspended)
        let exit = driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")), after: .seconds(60))
        #expect(exit.steps == [.transition(.suspended, .terminated), .arm])
        #expect(driver.app.terminationReason?.code == .crashed)

        #expect(driver.feed(.socketReady(sipData), after: .seconds(60)).steps == [.launch(inBackground: true)])
        let launched = driver.feed(.launched(inBackground: true, reason: "data on sip"))
        #expect(launched.delivered.isEmpty, "the event waits for the connection")
        #expect(driver.app.state == .background)
        #expect(driver.app.connection == .awaiting)

        let connected = driver.feed(.connected, after: .seconds(1))
        #expect(connected.deliveredKinds == [.voipSocketReadable])
        #expect(connected.delivered.first?.socket == sipData)
        #expect(driver.acknowledge(.voipSocketReadable).steps == [.arm, .suspend])
        #expect(driver.app.launchCount == 2)
    }

    @Test("an app ended on purpose (force quit, terminate, exits-on-suspend) is not brought back by data; a crash or memory pressure is")
    func endedByChoice() {
        for (input, relaunches) in [(LifecycleInput.killRequested, false), (.terminateRequested, false), (.memoryPressureKill, true)] {
            var driver = Driver.at(.suspended)
            driver.feed(input)
            let exit = driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
            #expect(exit.steps.last == (relaunches ? .arm : .disarm), "\(input)")
            #expect(driver.app.endedByChoice == !relaunches)
            let data = driver.feed(.socketReady(sipData))
            #expect(data.steps == (relaunches ? [.launch(inBackground: true)] : [.disarm]), "\(input)")
            #expect(driver.feed(.heldSocketsChanged(2)).steps == (relaunches ? [.arm] : [.disarm]), "\(input)")
        }
        // Launched again by hand, it is a VoIP app like any other.
        var driver = Driver.at(.suspended)
        driver.feed(.killRequested)
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        driver.feed(.launched(inBackground: false, reason: "by hand"))
        #expect(!driver.app.endedByChoice)
    }

    @Test("without a way to launch it, a dead app's sockets are not watched")
    func cannotLaunch() {
        var driver = Driver.at(.suspended, policy: AppPolicy(canLaunch: false))
        #expect(driver.feed(.processExited(.exited(code: 1))).steps == [.transition(.suspended, .terminated), .disarm])
        #expect(driver.feed(.socketReady(sipData)).steps == [.disarm])
        #expect(driver.feed(.foregroundRequested).isRejected)
    }

    @Test("relaunchOnData off: data does not relaunch")
    func relaunchOff() {
        var driver = Driver.at(.suspended, policy: AppPolicy(canLaunch: true, relaunchOnData: false))
        #expect(driver.feed(.processExited(.exited(code: 1))).steps.last == .disarm)
        #expect(driver.feed(.socketReady(sipData)).steps == [.disarm])
    }

    @Test("one quick death relaunches at once; from the second in a row the gap doubles up to the maximum")
    func throttle() {
        var driver = Driver.at(.notRunning)
        let gaps: [Duration] = [10, 20, 40, 80, 160, 300, 300].map { .seconds($0) }
        driver.feed(.launched(inBackground: true, reason: "first"))
        driver.feed(.processExited(.exited(code: 1)), after: .seconds(1))
        #expect(driver.app.quickDeaths == 1)
        #expect(driver.feed(.socketReady(sipData)).steps == [.launch(inBackground: true)], "a single crash is not throttled")
        driver.feed(.launched(inBackground: true, reason: "relaunched"))
        for gap in gaps {
            driver.feed(.processExited(.exited(code: 1)), after: .seconds(1))
            let data = driver.feed(.socketReady(sipData))
            #expect(data.steps == [.disarm, .start(.relaunchThrottle)])
            #expect(data.startDelay(of: .relaunchThrottle) == gap - .seconds(1), "the gap counts from the last launch")
            #expect(driver.app.relaunchScheduled)
            #expect(driver.feed(.socketReady(sipData)).steps == [], "one relaunch at a time")
            #expect(driver.feed(.heldSocketsChanged(2)).steps == [.disarm], "not watched while a relaunch waits")
            let fire = driver.feed(.timerFired(.relaunchThrottle), after: gap - .seconds(1))
            #expect(fire.steps == [.launch(inBackground: true)])
            driver.feed(.launched(inBackground: true, reason: "throttled"))
        }
        // A run that lasts resets the count: the next relaunch is immediate.
        driver.feed(.processExited(.exited(code: 0)), after: .seconds(60))
        #expect(driver.app.quickDeaths == 0)
        #expect(driver.feed(.socketReady(sipData)).steps == [.launch(inBackground: true)])
    }

    @Test("data reported twice for the same socket while the relaunch waits is delivered once")
    func oneReportPerSocket() {
        var driver = Driver.at(.notRunning)
        // Two quick deaths in a row, so the second relaunch waits for the throttle.
        driver.feed(.launched(inBackground: true, reason: "first"))
        driver.feed(.processExited(.exited(code: 1)), after: .seconds(1))
        driver.feed(.socketReady(sipData))
        driver.feed(.launched(inBackground: true, reason: "second"))
        driver.feed(.processExited(.exited(code: 1)), after: .seconds(1))
        driver.feed(.socketReady(sipData))
        driver.feed(.socketReady(SocketReadiness(name: "sip", bytesAvailable: 900, peerClosed: false)))
        driver.feed(.timerFired(.relaunchThrottle), after: .seconds(9))
        driver.feed(.launched(inBackground: true, reason: "throttled"))
        let connected = driver.feed(.connected)
        #expect(connected.delivered.map(\.socket?.bytesAvailable) == [900], "the newest report counts")
        #expect(driver.acknowledge(.voipSocketReadable).steps == [.arm, .suspend])
    }
}

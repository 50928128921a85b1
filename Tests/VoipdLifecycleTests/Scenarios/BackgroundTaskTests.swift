import Testing
import VoipdLifecycle
import VoipdVocabulary

/// beginBackgroundTask / endBackgroundTask, the expiration warning and the budgets.
@Suite("Background tasks")
struct BackgroundTaskTests {
    @Test("a task begun while didEnterBackground is handled keeps the app running after the acknowledgement")
    func taskKeepsAppRunning() throws {
        var driver = Driver.at(.active)
        driver.leaveForeground()
        let id = try #require(driver.feed(.beginBackgroundTask(name: "quiesce")).backgroundTaskID)
        #expect(id != 0)
        #expect(driver.acknowledge(.didEnterBackground).steps == [])
        #expect(driver.phase == .background)
        #expect(driver.app.openTasks == [id: "quiesce"])
        #expect(driver.feed(.endBackgroundTask(id: id), after: .seconds(20)).steps == [.arm, .suspend])
    }

    @Test("the budget runs out with the task open: backgroundTaskWillExpire, then kill(backgroundTaskExpired)")
    func budgetExpires() {
        var driver = Driver.at(.background)
        let warning = driver.feed(.timerFired(.taskExpirationWarning), after: .seconds(175))
        #expect(warning.steps == [.deliver(.backgroundTaskWillExpire), .start(.acknowledgement)])
        #expect(warning.startDelay(of: .acknowledgement) == driver.timings.expirationWarning)
        #expect(driver.acknowledge(.backgroundTaskWillExpire).steps == [], "the task is still open")

        let kill = driver.feed(.timerFired(.taskBudget), after: .seconds(5))
        #expect(kill.steps == [.kill(.backgroundTaskExpired)])
        driver.feed(.processExited(.signaled(signal: 9, name: "SIGKILL")))
        #expect(driver.app.terminationReason?.code == .backgroundTaskExpired)
    }

    @Test("ending the task on the warning suspends at once, and the budget timer then does nothing")
    func endedOnWarning() {
        var driver = Driver.at(.background)
        driver.feed(.timerFired(.taskExpirationWarning), after: .seconds(175))
        driver.feed(.endBackgroundTask(id: 1))
        #expect(driver.acknowledge(.backgroundTaskWillExpire).steps == [.arm, .suspend])
        #expect(driver.feed(.timerFired(.taskBudget), after: .seconds(5)).steps == [])
    }

    @Test("the app is suspended as soon as its last task ends (seed 002)")
    func lastTaskEnds() throws {
        var driver = Driver.at(.background)
        let second = try #require(driver.feed(.beginBackgroundTask(name: "second")).backgroundTaskID)
        #expect(driver.feed(.endBackgroundTask(id: 1)).steps == [], "another task is open")
        #expect(driver.feed(.endBackgroundTask(id: second)).steps == [.arm, .suspend])
        #expect(driver.feed(.endBackgroundTask(id: second)).isRejected, "already ended")
    }

    @Test("a task is refused (id 0) once the budget is spent")
    func refusedWhenSpent() {
        var driver = Driver.at(.background)
        #expect(driver.feed(.beginBackgroundTask(name: "late"), after: .seconds(181)).backgroundTaskID == 0)
        #expect(driver.app.openTasks.count == 1)
    }

    @Test("leaving the foreground gives 180 s of task time")
    func firstBudget() {
        var driver = Driver.at(.active)
        let enter = driver.leaveForeground()
        #expect(enter.startDelay(of: .taskBudget) == .seconds(180))
        #expect(enter.startDelay(of: .taskExpirationWarning) == .seconds(175))
        expectBudget(of: .seconds(180), in: &driver)
    }

    @Test("a resume in the background gives 30 s of task time")
    func resumedBudget() {
        var driver = Driver.at(.suspended)
        let wake = driver.feed(.socketReady(sipData), after: .seconds(600))
        #expect(wake.startDelay(of: .taskBudget) == .seconds(30))
        #expect(wake.startDelay(of: .taskExpirationWarning) == .seconds(25))
        expectBudget(of: .seconds(30), in: &driver)
    }

    /// A task begun at once keeps the app running; another is granted just before the
    /// budget ends and refused just after, as measured by `now`.
    private func expectBudget(of budget: Duration, in driver: inout Driver,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        let start = driver.now
        #expect(driver.app.taskBudgetDeadline == start + budget, sourceLocation: sourceLocation)
        #expect(driver.feed(.beginBackgroundTask(name: "first")).backgroundTaskID != 0, sourceLocation: sourceLocation)
        driver.advance(by: budget - .seconds(1))
        #expect(driver.feed(.beginBackgroundTask(name: "just in time")).backgroundTaskID != 0, sourceLocation: sourceLocation)
        driver.advance(by: .seconds(2))
        #expect(driver.feed(.beginBackgroundTask(name: "too late")).backgroundTaskID == 0, sourceLocation: sourceLocation)
    }

    @Test("tasks cost nothing in the foreground and carry over into the background")
    func foregroundTask() throws {
        var driver = Driver.at(.active)
        let id = try #require(driver.feed(.beginBackgroundTask(name: "download")).backgroundTaskID)
        #expect(id != 0)
        #expect(driver.app.taskBudgetDeadline == nil)
        driver.enterBackground()
        #expect(driver.phase == .background)
        #expect(driver.app.openTasks[id] == "download")
    }
}

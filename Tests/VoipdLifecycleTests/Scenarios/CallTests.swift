import Testing
import VoipdLifecycle
import VoipdVocabulary

/// The "in a call" state (an active audio session): the app is not suspended and no budget
/// runs out while it lasts; when it ends, the background rules apply again.
@Suite("Calls")
struct CallTests {
    @Test("a call answered during a wake outlasts the wake budget and the task budget; it ends, the app is suspended at once")
    func callOutlastsBudgets() {
        var driver = Driver.at(.suspended)
        driver.feed(.socketReady(sipData), after: .seconds(60))
        #expect(driver.feed(.setAudioSessionActive(true)).cancels(.wakeBudget))
        #expect(driver.app.audioSessionActive)
        #expect(driver.app.taskBudgetDeadline == nil, "no budget runs in a call")
        #expect(driver.acknowledge(.voipSocketReadable).steps == [], "acknowledged in a call: not suspended")
        // Every timer of a wake fires late, and changes nothing.
        for timer in [LifecycleTimer.wakeBudget, .taskExpirationWarning, .taskBudget] {
            #expect(driver.feed(.timerFired(timer), after: .seconds(60)).steps == [])
        }
        #expect(driver.phase == .background)

        let end = driver.feed(.setAudioSessionActive(false), after: .seconds(3600))
        #expect(end.steps == [.arm, .suspend])
        #expect(end.actions.contains(.markSockets), "the app waits for the reply: what it read before asking, it handled")
        #expect(!driver.app.audioSessionActive)
    }

    @Test("a background task open when the call ends gets a resumed app's budget")
    func taskAfterCall() {
        var driver = Driver.at(.suspended)
        driver.feed(.socketReady(sipData), after: .seconds(60))
        driver.feed(.setAudioSessionActive(true))
        let task = driver.feed(.beginBackgroundTask(name: "hang up"))
        #expect(task.backgroundTaskID != 0, "a task in a call is free")
        driver.acknowledge(.voipSocketReadable)
        let end = driver.feed(.setAudioSessionActive(false), after: .seconds(600))
        #expect(end.startDelay(of: .taskBudget) == driver.timings.resumedTaskBudget)
        #expect(driver.phase == .background)
        #expect(driver.feed(.endBackgroundTask(id: task.backgroundTaskID ?? 0)).steps == [.arm, .suspend])
    }

    @Test("in a call in the foreground, leaving it starts no budget; the call's end does")
    func callFromForeground() {
        var driver = Driver.at(.active)
        driver.feed(.setAudioSessionActive(true))
        driver.leaveForeground()
        let entered = driver.acknowledge(.didEnterBackground)
        #expect(entered.steps == [])
        #expect(driver.phase == .background)
        #expect(driver.app.taskBudgetDeadline == nil)
        #expect(driver.feed(.setAudioSessionActive(false), after: .seconds(900)).steps == [.arm, .suspend])
    }

    @Test("the maximum call duration ends the call as if the app had")
    func maximumDuration() {
        var timings = LifecycleTimings()
        timings.maximumCallDuration = .seconds(7200)
        var driver = Driver.at(.suspended, timings: timings)
        driver.feed(.socketReady(sipData), after: .seconds(60))
        let begin = driver.feed(.setAudioSessionActive(true))
        #expect(begin.startDelay(of: .callLimit) == .seconds(7200))
        driver.acknowledge(.voipSocketReadable)
        #expect(driver.feed(.timerFired(.callLimit), after: .seconds(7200)).steps == [.arm, .suspend])
        #expect(!driver.app.audioSessionActive)
    }

    @Test("a policy without calls refuses one, and ends one that is going on")
    func policyForbids() {
        var forbidding = AppPolicy.voipApp
        forbidding.allowsCalls = false
        var refused = Driver.at(.background, policy: forbidding)
        #expect(refused.feed(.setAudioSessionActive(true)).isRejected)

        var driver = Driver.at(.suspended)
        driver.feed(.socketReady(sipData), after: .seconds(60))
        driver.feed(.setAudioSessionActive(true))
        driver.acknowledge(.voipSocketReadable)
        #expect(driver.setPolicy(forbidding).steps == [.arm, .suspend])
    }

    @Test("the process ends: the call ends with it")
    func exitEndsCall() {
        var driver = Driver.at(.active)
        driver.feed(.setAudioSessionActive(true))
        driver.feed(.processExited(.exited(code: 0)), after: .seconds(60))
        #expect(!driver.app.audioSessionActive)
        #expect(driver.app.callStartedAt == nil)
    }
}

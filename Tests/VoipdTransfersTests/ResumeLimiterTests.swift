import Foundation
import Testing
import VoipdTransfers

/// The resume rate limiter's curve, as docs/TRANSFERS.md documents it.
@Suite("Resume rate limiter curve")
struct ResumeLimiterTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("the default curve: 10 s, doubling with each resume, at most an hour")
    func defaultCurve() {
        let curve = ResumeLimiterCurve()
        let periods = (0...11).map { curve.period(atLevel: $0) }
        #expect(periods == [0, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600])
        #expect(curve.topLevel == 10)
        #expect(curve.coalescingWindow == 2)
        #expect(curve.decayFactor == 2)
        #expect(curve.placement == .delayResumes)
        #expect(curve.problem == nil)
    }

    @Test("each resume raises the level by one, up to the top level")
    func rises() {
        let curve = ResumeLimiterCurve(initialPeriod: 10, maximumPeriod: 40, coalescingWindow: 0)
        #expect(curve.topLevel == 3)
        var limiter = ResumeRateLimiter()
        var at = t0
        var levels: [Int] = []
        for _ in 0..<5 {
            limiter.recordResume(at: at, curve: curve)
            levels.append(limiter.level)
            at = limiter.earliestResume(curve: curve)!
        }
        #expect(levels == [1, 2, 3, 3, 3])
    }

    @Test("a resume is allowed one work period after the previous one")
    func earliest() {
        let curve = ResumeLimiterCurve()
        var limiter = ResumeRateLimiter()
        #expect(limiter.earliestResume(curve: curve) == nil)
        limiter.recordResume(at: t0, curve: curve)
        #expect(limiter.earliestResume(curve: curve) == t0.addingTimeInterval(10))
        limiter.recordResume(at: t0.addingTimeInterval(10), curve: curve)
        #expect(limiter.earliestResume(curve: curve) == t0.addingTimeInterval(30))
    }

    @Test("left alone for decayFactor × its period, the level falls by one, step after step")
    func decays() {
        let curve = ResumeLimiterCurve()
        var limiter = ResumeRateLimiter()
        var at = t0
        for _ in 0..<4 {
            limiter.recordResume(at: at, curve: curve)
            at = at.addingTimeInterval(curve.period(atLevel: limiter.level))
        }
        let last = limiter.lastResume!
        #expect(limiter.level == 4)
        // Level 4 (80 s) falls after 160 s, level 3 (40 s) after 80 s more, then 40 s, then 20 s.
        #expect(limiter.level(at: last.addingTimeInterval(159), curve: curve) == 4)
        #expect(limiter.level(at: last.addingTimeInterval(160), curve: curve) == 3)
        #expect(limiter.level(at: last.addingTimeInterval(240), curve: curve) == 2)
        #expect(limiter.level(at: last.addingTimeInterval(280), curve: curve) == 1)
        #expect(limiter.level(at: last.addingTimeInterval(299), curve: curve) == 1)
        #expect(limiter.level(at: last.addingTimeInterval(300), curve: curve) == 0)
        #expect(limiter.period(at: last.addingTimeInterval(300), curve: curve) == 0)
        // A resume after the decay starts from the decayed level.
        limiter.recordResume(at: last.addingTimeInterval(250), curve: curve)
        #expect(limiter.level == 3)
    }

    @Test("a chain of resumes, each as soon as allowed, never decays")
    func chainDoesNotDecay() {
        let curve = ResumeLimiterCurve()
        var limiter = ResumeRateLimiter()
        var at = t0
        for expected in 1...10 {
            limiter.recordResume(at: at, curve: curve)
            #expect(limiter.level == expected)
            at = limiter.earliestResume(curve: curve)!
        }
    }

    @Test("coming to the foreground resets it")
    func reset() {
        let curve = ResumeLimiterCurve()
        var limiter = ResumeRateLimiter()
        limiter.recordResume(at: t0, curve: curve)
        limiter.recordResume(at: t0.addingTimeInterval(10), curve: curve)
        limiter.reset()
        #expect(limiter.level == 0)
        #expect(limiter.earliestResume(curve: curve) == nil)
    }

    @Test("curves that cannot work are refused", arguments: [
        ResumeLimiterCurve(initialPeriod: 0, maximumPeriod: 10, coalescingWindow: 1),
        ResumeLimiterCurve(initialPeriod: 10, growthFactor: 0.5, maximumPeriod: 10, coalescingWindow: 1),
        ResumeLimiterCurve(initialPeriod: 10, maximumPeriod: 5, coalescingWindow: 1),
        ResumeLimiterCurve(initialPeriod: 10, maximumPeriod: 50, decayFactor: 0.5, coalescingWindow: 1),
        ResumeLimiterCurve(initialPeriod: 10, maximumPeriod: 50, coalescingWindow: -1),
    ])
    func problems(curve: ResumeLimiterCurve) {
        #expect(curve.problem != nil)
        var configuration = TransferConfiguration()
        configuration.resumeLimiter = curve
        #expect(configuration.problem?.hasPrefix("resumeLimiter") == true)
    }

    @Test("a curve that does not grow stays at the first level")
    func flat() {
        let curve = ResumeLimiterCurve(initialPeriod: 5, growthFactor: 1, maximumPeriod: 60, coalescingWindow: 1)
        #expect(curve.topLevel == 1)
        #expect(curve.period(atLevel: 7) == 5)
    }

    @Test("the retry back-off doubles from its first delay up to its maximum")
    func retryCurve() {
        let curve = RetryCurve()
        #expect((1...11).map { curve.delay(afterFailures: $0) } == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300])
        #expect(curve.delay(afterFailures: 0) == 1)
    }

    @Test("scaling shrinks every duration together")
    func scaling() {
        let scaled = TransferConfiguration().scaled(by: 0.01)
        #expect(scaled.resumeLimiter.initialPeriod == 0.1)
        #expect(scaled.resumeLimiter.maximumPeriod == 36)
        #expect(scaled.resumeLimiter.coalescingWindow == 0.02)
        #expect(scaled.retry.initialDelay == 0.01)
        #expect(scaled.budgetWindow == 864)
        #expect(scaled.defaultOptions.timeoutIntervalForResource == 6048)
        #expect(scaled.resumeLimiter.growthFactor == 2)
    }
}

/// The daily budget windows.
@Suite("Network budgets")
struct NetworkBudgetTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let day: Double = 86400

    @Test("a window opens with the first byte and closes a day later")
    func window() {
        var budgets = NetworkBudgets()
        #expect(budgets.window(.wifi, at: t0, length: day) == nil)
        budgets.record(600, on: .wifi, at: t0, length: day)
        budgets.record(500, on: .wifi, at: t0.addingTimeInterval(3600), length: day)
        #expect(budgets.used(.wifi, at: t0.addingTimeInterval(7200), length: day) == 1100)
        #expect(budgets.spentUntil(.wifi, at: t0.addingTimeInterval(7200), budget: 1000, length: day) == t0.addingTimeInterval(day))
        #expect(budgets.spentUntil(.wifi, at: t0.addingTimeInterval(7200), budget: 2000, length: day) == nil)
        #expect(budgets.spentUntil(.wifi, at: t0.addingTimeInterval(7200), budget: nil, length: day) == nil)
        // The next day, a new window.
        #expect(budgets.spentUntil(.wifi, at: t0.addingTimeInterval(day), budget: 1000, length: day) == nil)
        budgets.record(10, on: .wifi, at: t0.addingTimeInterval(day + 5), length: day)
        #expect(budgets.window(.wifi, at: t0.addingTimeInterval(day + 5), length: day)?.start == t0.addingTimeInterval(day + 5))
        #expect(budgets.used(.wifi, at: t0.addingTimeInterval(day + 5), length: day) == 10)
    }

    @Test("each network kind has its own budget")
    func perKind() {
        var budgets = NetworkBudgets()
        budgets.record(5000, on: .wifi, at: t0, length: day)
        #expect(budgets.used(.cellular, at: t0, length: day) == 0)
        var configuration = TransferConfiguration()
        configuration.dailyBudget = 100
        configuration.dailyBudgetByNetwork = ["cellular": 10, "ethernet": -1]
        #expect(configuration.budget(for: .wifi) == 100)
        #expect(configuration.budget(for: .cellular) == 10)
        #expect(configuration.budget(for: .ethernet) == nil)
        #expect(TransferConfiguration().budget(for: .wifi) == 5_000_000_000)
    }
}

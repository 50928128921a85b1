import Testing
import VoipdLifecycle
import VoipdVocabulary

@Suite("LifecycleTimings")
struct LifecycleTimingsTests {
    @Test("scaled(by:) multiplies every duration, found by reflection so that none is forgotten")
    func scaledScalesEveryField() throws {
        var timings = LifecycleTimings()
        timings.reclaimAfterSuspension = .seconds(120)
        timings.maximumCallDuration = .seconds(3600)
        let factor = 0.01
        let scaled = timings.scaled(by: factor)
        let fields = Mirror(reflecting: timings).children
        let scaledFields = Mirror(reflecting: scaled).children
        #expect(fields.count == 17)
        for (field, scaledField) in zip(fields, scaledFields) {
            let label = field.label ?? "?"
            let original = try #require(field.value as? Duration, "\(label) is not a set duration")
            #expect(scaledField.value as? Duration == original * factor, "\(label)")
            #expect(original == .zero || scaledField.value as? Duration != original, "\(label) did not change")
        }
    }

    @Test("a reclaim or a hibernation that never happens stays never")
    func nilStaysNil() {
        var never = LifecycleTimings()
        never.hibernateAfterSuspension = nil
        #expect(never.scaled(by: 0.5).reclaimAfterSuspension == nil)
        #expect(never.scaled(by: 0.5).hibernateAfterSuspension == nil)
        #expect(never.scaled(by: 0.5).maximumCallDuration == nil)
    }

    @Test("a duration by name: from 0 to a year, or none")
    func settingByName() {
        let timings = LifecycleTimings()
        #expect(timings.setting("wakeBudget", seconds: 12.5)?.wakeBudget == .milliseconds(12500))
        #expect(timings.setting("reclaimAfterSuspension", seconds: 0)?.reclaimAfterSuspension == nil)
        #expect(timings.setting("hibernateAfterSuspension", seconds: 0)?.hibernateAfterSuspension == nil)
        #expect(timings.setting("hibernateAfterSuspension", seconds: 90)?.hibernateAfterSuspension == .seconds(90))
        #expect(timings.setting("wakeBudget", seconds: 365 * 24 * 3600)?.wakeBudget == LifecycleTimings.longest)
        // Found by Tests/Fuzz: 6e200 s trapped converting to a Duration.
        for seconds in [-1, 365 * 24 * 3600 + 1, 6e200, .infinity, .nan] {
            #expect(timings.setting("relaunchThrottleMaximum", seconds: seconds) == nil, "\(seconds)")
        }
        #expect(timings.setting("wakeBudgett", seconds: 1) == nil)
    }

    /// Found by Tests/Fuzz: a keep-alive of 5 s with the 30 s tolerance fired with every
    /// other timer, and a zero wake budget then resumed and suspended the app forever.
    @Test("a keep-alive fires early by its tolerance, but never by half its interval; other timers never early")
    func tolerance() {
        let timings = LifecycleTimings()
        #expect(timings.tolerance(of: .keepAlive, after: .seconds(600)) == .seconds(30))
        #expect(timings.tolerance(of: .keepAlive, after: .seconds(5)) == .milliseconds(2500))
        #expect(timings.tolerance(of: .keepAlive, after: .zero) == .zero)
        for timer in LifecycleTimer.allCases where timer != .keepAlive {
            #expect(timings.tolerance(of: timer, after: .seconds(600)) == .zero, "\(timer)")
        }
    }

    @Test("the defaults are iOS's")
    func defaults() {
        let timings = LifecycleTimings()
        #expect(timings.didEnterBackgroundWatchdog == .seconds(5))
        #expect(timings.backgroundTaskBudget == .seconds(180))
        #expect(timings.resumedTaskBudget == .seconds(30))
        #expect(timings.wakeBudget == .seconds(10))
        #expect(timings.keepAliveMinimum == .seconds(600))
        #expect(timings.keepAliveFloor == .seconds(60), "iOS had none: the lowest a manifest may lower the minimum to")
        #expect(timings.hibernateAfterSuspension == .seconds(60), "seed 004 is silent on when; a minute of suspension")
    }

    @Test("the watchdog of each event kind; wakes have none (their budget governs)")
    func watchdogs() {
        let timings = LifecycleTimings()
        let expected: [AppEventKind: Duration?] = [
            .willResignActive: .seconds(10), .didEnterBackground: .seconds(5), .willEnterForeground: .seconds(10),
            .didBecomeActive: .seconds(10), .willTerminate: .seconds(5), .backgroundTaskWillExpire: .seconds(5),
            .voipSocketReadable: nil, .keepAlive: nil,
        ]
        for kind in AppEventKind.allCases {
            #expect(timings.watchdog(for: kind) == expected[kind] ?? nil, "\(kind)")
        }
    }
}

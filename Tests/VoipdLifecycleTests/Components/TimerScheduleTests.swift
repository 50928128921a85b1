import Testing
import VoipdLifecycle
import VoipdVocabulary

@Suite("TimerSchedule")
struct TimerScheduleTests {
    typealias Schedule = TimerSchedule<String>

    /// Timers a (30 s), b (10 s) and c (20 s), none tolerant.
    static func abc() -> Schedule {
        var schedule = Schedule()
        schedule.set("a", deadline: .at(30))
        schedule.set("b", deadline: .at(10))
        schedule.set("c", deadline: .at(20))
        return schedule
    }

    @Test("the earliest deadline follows cancels and moves")
    func earliest() {
        var schedule = Self.abc()
        #expect(schedule.earliestDeadline() == .at(10))
        schedule.cancel("b")
        #expect(schedule.earliestDeadline() == .at(20))
        schedule.set("c", deadline: .at(40))
        #expect(schedule.earliestDeadline() == .at(30))
        #expect(schedule.deadline(of: "c") == .at(40))
        schedule.cancel("nothing")
        #expect(schedule.count == 2)
        schedule.cancelAll { _ in true }
        #expect(schedule.earliestDeadline() == nil)
        #expect(schedule.count == 0)
    }

    @Test("due timers come earliest first, a deadline equal to now included, and are removed")
    func dueOrder() {
        var schedule = Self.abc()
        #expect(schedule.takeDue(at: .at(5)) == [])
        #expect(schedule.takeDue(at: .at(20)) == ["b", "c"])
        #expect(!schedule.contains("b") && schedule.contains("a"))
        #expect(schedule.takeDue(at: .at(20)) == [])
        #expect(schedule.takeDue(at: .at(100)) == ["a"])
        #expect(schedule.count == 0)
    }

    @Test("a moved timer fires at its new deadline only")
    func moved() {
        var schedule = Self.abc()
        schedule.set("b", deadline: .at(25))
        #expect(schedule.takeDue(at: .at(20)) == ["c"])
        #expect(schedule.takeDue(at: .at(30)) == ["b", "a"])
    }

    @Test("a tolerant timer whose window is open fires early with a due timer")
    func coalesced() {
        var schedule = Schedule()
        schedule.set("due", deadline: .at(100))
        schedule.set("later", deadline: .at(125), tolerance: .seconds(30))
        schedule.set("sooner", deadline: .at(110), tolerance: .seconds(30))
        #expect(schedule.takeDue(at: .at(100)) == ["due", "sooner", "later"])
        #expect(schedule.count == 0)
    }

    @Test("a tolerant timer whose window has not opened waits for its own deadline")
    func windowClosed() {
        var schedule = Schedule()
        schedule.set("due", deadline: .at(100))
        schedule.set("later", deadline: .at(140), tolerance: .seconds(30))
        #expect(schedule.takeDue(at: .at(100)) == ["due"])
        #expect(schedule.takeDue(at: .at(139)) == [])
        #expect(schedule.takeDue(at: .at(140)) == ["later"])
    }

    @Test("a tolerant timer never fires early on its own")
    func notAlone() {
        var schedule = Schedule()
        schedule.set("tolerant", deadline: .at(120), tolerance: .seconds(30))
        #expect(schedule.takeDue(at: .at(100)) == [])
        #expect(schedule.earliestDeadline() == .at(120))
    }

    @Test("a timer reset without tolerance, or cancelled, no longer fires early")
    func toleranceWithdrawn() {
        var schedule = Schedule()
        schedule.set("due", deadline: .at(100))
        schedule.set("reset", deadline: .at(110), tolerance: .seconds(30))
        schedule.set("reset", deadline: .at(110))
        schedule.set("cancelled", deadline: .at(110), tolerance: .seconds(30))
        schedule.cancel("cancelled")
        #expect(schedule.takeDue(at: .at(100)) == ["due"])
        #expect(schedule.takeDue(at: .at(110)) == ["reset"])
    }

    @Test("the heap stays bounded under 100 000 set/cancel cycles with few live timers")
    func boundedHeap() {
        var schedule = Schedule()
        schedule.set("live-1", deadline: .at(1_000_000))
        schedule.set("live-2", deadline: .at(2_000_000))
        var largest = 0
        for cycle in 0..<100_000 {
            schedule.set("wake", deadline: .at(cycle + 10))
            schedule.set("live-1", deadline: .at(1_000_000 + cycle))
            schedule.cancel("wake")
            largest = max(largest, schedule.storedDeadlineCount)
        }
        #expect(schedule.count == 2)
        #expect(largest <= 2 * 3 + 64 + 1)
        #expect(schedule.earliestDeadline() == .at(1_099_999))
        #expect(schedule.takeDue(at: .at(1_500_000)) == ["live-1"])
        #expect(schedule.takeDue(at: .at(2_000_000)) == ["live-2"])
        #expect(schedule.earliestDeadline() == nil)
    }
}

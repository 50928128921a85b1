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

    @Test("with many tolerant timers set, a fire takes only those whose window opened, earliest deadline first")
    func manyTolerant() {
        var schedule = Schedule()
        // 1,000 keep-alives with windows opening from 1,000 s on, the way a thousand suspended apps hold them.
        for app in 0..<1000 { schedule.set("keep-alive-\(app)", deadline: .at(1030 + app), tolerance: .seconds(30)) }
        // Stale windows: moved (the new window opens later) and cancelled.
        schedule.set("keep-alive-0", deadline: .at(5000), tolerance: .seconds(30))
        schedule.cancel("keep-alive-1")
        // A keep-alive set again without tolerance is not early any more.
        schedule.set("keep-alive-2", deadline: .at(1032))
        schedule.set("check", deadline: .at(1003))
        #expect(schedule.takeDue(at: .at(1003)) == ["check", "keep-alive-3"])
        #expect(schedule.takeDue(at: .at(1006)) == [])
        schedule.set("check", deadline: .at(1006))
        #expect(schedule.takeDue(at: .at(1006)) == ["check", "keep-alive-4", "keep-alive-5", "keep-alive-6"])
        #expect(schedule.contains("keep-alive-2") && schedule.contains("keep-alive-0") && !schedule.contains("keep-alive-1"))
        #expect(schedule.count == 1000 - 5)
        #expect(schedule.takeDue(at: .at(1032)) == ["keep-alive-2", "keep-alive-7", "keep-alive-8", "keep-alive-9",
                                                     "keep-alive-10", "keep-alive-11", "keep-alive-12", "keep-alive-13",
                                                     "keep-alive-14", "keep-alive-15", "keep-alive-16", "keep-alive-17",
                                                     "keep-alive-18", "keep-alive-19", "keep-alive-20", "keep-alive-21",
                                                     "keep-alive-22", "keep-alive-23", "keep-alive-24", "keep-alive-25",
                                                     "keep-alive-26", "keep-alive-27", "keep-alive-28", "keep-alive-29",
                                                     "keep-alive-30", "keep-alive-31", "keep-alive-32"])
    }

    @Test("the tolerant timers' windows stay bounded under 100 000 set/cancel cycles")
    func boundedWindows() {
        var schedule = Schedule()
        schedule.set("live", deadline: .at(1_000_000), tolerance: .seconds(30))
        var largest = 0
        for cycle in 0..<100_000 {
            schedule.set("keep-alive", deadline: .at(cycle + 100), tolerance: .seconds(30))
            schedule.set("live", deadline: .at(1_000_000 + cycle), tolerance: .seconds(30))
            if cycle % 2 == 0 { schedule.cancel("keep-alive") }
            largest = max(largest, schedule.storedWindowCount)
        }
        #expect(largest <= 2 * 2 + 64 + 2)
        #expect(schedule.takeDue(at: .at(100_099)) == ["keep-alive"])
        schedule.set("due", deadline: .at(1_099_970))
        #expect(schedule.takeDue(at: .at(1_099_970)) == ["due", "live"])
        #expect(schedule.count == 0)
    }
}

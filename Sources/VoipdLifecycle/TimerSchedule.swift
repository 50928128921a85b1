import VoipdVocabulary

/// Deadlines for many timers, served by one kernel timer: the owner arms its timerfd for
/// ``earliestDeadline`` and calls ``takeDue(at:)`` when it fires.
///
/// A timer set with a tolerance may fire early, by up to that much, when the system wakes
/// up anyway for another timer: keep-alive wakes of several apps due within the window
/// become one wake-up.
///
/// Inlinable, so that the daemon's module specializes it for its own key: unspecialized,
/// every `set` and `cancel` looked up the generic metadata of its dictionary, set and heap
/// at run time (about 5,000 instructions each, a dozen of them per wake cycle).
public struct TimerSchedule<Key: Hashable & Sendable>: Sendable {
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline var deadline: MonotonicInstant
        @usableFromInline var tolerance: Duration
        @usableFromInline var generation: UInt64

        @inlinable
        init(deadline: MonotonicInstant, tolerance: Duration, generation: UInt64) {
            self.deadline = deadline
            self.tolerance = tolerance
            self.generation = generation
        }
    }

    @usableFromInline typealias Item = (deadline: MonotonicInstant, key: Key, generation: UInt64)

    @usableFromInline var entries: [Key: Entry] = [:]
    /// A min-heap of (deadline, key, generation); entries whose generation no longer
    /// matches were cancelled or moved and are skipped when they surface.
    @usableFromInline var heap: [Item] = []
    /// The tolerant timers by when their window opens (deadline − tolerance), a min-heap like
    /// ``heap`` (stale items skipped the same way): ``takeDue(at:)`` takes those whose window
    /// has opened from its top, instead of looking at every tolerant timer each time a timer
    /// fires (with 1,000 apps' keep-alives, each fire of a freeze's confirmation re-read).
    @usableFromInline var windows: [Item] = []
    @usableFromInline var generation: UInt64 = 0

    @inlinable
    public init() {}

    /// How many timers are set.
    @inlinable
    public var count: Int { entries.count }

    /// How many deadlines the heap holds, stale ones (cancelled or moved) included: for
    /// tests that its growth stays bounded.
    package var storedDeadlineCount: Int { heap.count }

    /// How many window openings of tolerant timers are held, stale ones included: for tests
    /// that their growth stays bounded too.
    package var storedWindowCount: Int { windows.count }

    /// Whether `key` is set.
    @inlinable
    public func contains(_ key: Key) -> Bool { entries[key] != nil }

    /// The deadline of `key`, if set.
    @inlinable
    public func deadline(of key: Key) -> MonotonicInstant? { entries[key]?.deadline }

    /// Sets (or moves) a timer.
    @inlinable
    public mutating func set(_ key: Key, deadline: MonotonicInstant, tolerance: Duration = .zero) {
        generation += 1
        entries[key] = Entry(deadline: deadline, tolerance: tolerance, generation: generation)
        Self.push((deadline, key, generation), into: &heap)
        if tolerance > .zero { Self.push((deadline - tolerance, key, generation), into: &windows) }
        // Cancelled and moved timers stay in the heaps until they surface; rebuild them when
        // they outnumber the live ones, so a busy wake cycle cannot grow them without bound.
        if heap.count > 2 * entries.count + 64 || windows.count > 2 * entries.count + 64 { rebuildHeaps() }
    }

    @inlinable
    mutating func rebuildHeaps() {
        heap.removeAll(keepingCapacity: true)
        windows.removeAll(keepingCapacity: true)
        for (key, entry) in entries {
            Self.push((entry.deadline, key, entry.generation), into: &heap)
            if entry.tolerance > .zero { Self.push((entry.deadline - entry.tolerance, key, entry.generation), into: &windows) }
        }
    }

    /// Every timer set: its key, deadline and tolerance.
    @inlinable
    public var all: [(key: Key, deadline: MonotonicInstant, tolerance: Duration)] {
        entries.map { ($0.key, $0.value.deadline, $0.value.tolerance) }
    }

    /// Cancels a timer (nothing happens if it is not set).
    @inlinable
    public mutating func cancel(_ key: Key) {
        entries[key] = nil
    }

    /// Cancels every timer matching `predicate`.
    @inlinable
    public mutating func cancelAll(where predicate: (Key) -> Bool) {
        for key in entries.keys where predicate(key) { cancel(key) }
    }

    /// The earliest deadline of any set timer.
    @inlinable
    public mutating func earliestDeadline() -> MonotonicInstant? {
        dropStaleTop()
        return heap.first?.deadline
    }

    /// Removes and returns the timers due at `now`, earliest first, together with the
    /// tolerant timers whose window has opened (earliest deadline first, after the due ones).
    /// Costs what it takes (a heap's pop each), not the number of timers set.
    @inlinable
    public mutating func takeDue(at now: MonotonicInstant) -> [Key] {
        var due: [Key] = []
        while true {
            dropStaleTop()
            guard let top = heap.first, top.deadline <= now else { break }
            due.append(top.key)
            entries[top.key] = nil
            Self.pop(&heap)
        }
        guard !due.isEmpty else { return due }
        // The system is awake now: whatever may fire early goes along. A window's item is
        // stale when its timer was taken above, cancelled, or set again since.
        var early: [(key: Key, deadline: MonotonicInstant)] = []
        while let top = windows.first, top.deadline <= now {
            Self.pop(&windows)
            guard let entry = entries[top.key], entry.generation == top.generation else { continue }
            early.append((top.key, entry.deadline))
        }
        early.sort { $0.deadline < $1.deadline }
        for (key, _) in early {
            due.append(key)
            cancel(key)
        }
        return due
    }

    @inlinable
    mutating func dropStaleTop() {
        while let top = heap.first, entries[top.key]?.generation != top.generation { Self.pop(&heap) }
    }

    @inlinable
    static func push(_ item: Item, into heap: inout [Item]) {
        heap.append(item)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    @inlinable
    static func pop(_ heap: inout [Item]) {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < heap.count && heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count && heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// Deadlines by key, earliest first: a binary min-heap with lazy deletion. Re-arming a key
/// pushes a new entry; entries whose deadline no longer matches the key's are skipped when
/// they reach the top. Each operation costs O(log n).
struct DeadlineQueue<Key: Hashable & Sendable>: Sendable {
    private struct Entry: Sendable {
        let deadline: ContinuousClock.Instant
        let key: Key
    }

    private var heap: [Entry] = []
    private var current: [Key: ContinuousClock.Instant] = [:]

    /// How many keys are armed.
    var count: Int { current.count }

    /// Arms `key` for `deadline`, replacing its earlier deadline.
    mutating func arm(_ key: Key, at deadline: ContinuousClock.Instant) {
        current[key] = deadline
        heap.append(Entry(deadline: deadline, key: key))
        siftUp(heap.count - 1)
        // Stale entries would pile up if keys were re-armed far more often than they fire.
        if heap.count > 4 * current.count + 64 { rebuild() }
    }

    mutating func disarm(_ key: Key) {
        current[key] = nil
    }

    /// The earliest armed deadline.
    mutating func earliest() -> ContinuousClock.Instant? {
        dropStale()
        return heap.first?.deadline
    }

    /// Disarms and returns the keys due at `now`, earliest first.
    mutating func takeDue(at now: ContinuousClock.Instant) -> [Key] {
        var due: [Key] = []
        while true {
            dropStale()
            guard let top = heap.first, top.deadline <= now else { break }
            popTop()
            current[top.key] = nil
            due.append(top.key)
        }
        return due
    }

    private mutating func dropStale() {
        while let top = heap.first, current[top.key] != top.deadline { popTop() }
    }

    private mutating func rebuild() {
        heap = current.map { Entry(deadline: $0.value, key: $0.key) }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private mutating func popTop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

import VoipdProtocol

/// The last transitions, oldest first, for `voipctl events`.
struct EventLog {
    private(set) var capacity: Int
    /// A ring once full: every transition of every wake is appended here, so an append must
    /// not shift the whole history (a thousand records) along.
    private var storage: [TransitionRecord] = []
    /// Where the oldest record is once the ring is full.
    private var oldest = 0

    init(capacity: Int) { self.capacity = max(capacity, 1) }

    /// The same log with another capacity, keeping the newest records.
    mutating func resize(to newCapacity: Int) {
        guard newCapacity != capacity else { return }
        var resized = EventLog(capacity: newCapacity)
        for record in records.suffix(resized.capacity) { resized.append(record) }
        self = resized
    }

    /// The records, oldest first.
    var records: [TransitionRecord] { Array(storage[oldest...] + storage[..<oldest]) }

    mutating func append(_ record: TransitionRecord) {
        guard storage.count == capacity else { return storage.append(record) }
        storage[oldest] = record
        oldest = (oldest + 1) % capacity
    }
}

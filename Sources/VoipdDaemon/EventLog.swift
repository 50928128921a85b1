import VoipdProtocol

/// The last transitions, oldest first, for `voipctl events`.
struct EventLog {
    let capacity: Int
    private(set) var records: [TransitionRecord] = []

    init(capacity: Int) { self.capacity = max(capacity, 1) }

    mutating func append(_ record: TransitionRecord) {
        if records.count >= capacity { records.removeFirst(records.count - capacity + 1) }
        records.append(record)
    }
}

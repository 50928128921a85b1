/// What the threads of a group of processes had done by one instant: a reading of counters
/// the kernel keeps per thread (/proc/PID/task/TID/schedstat). Two readings give the
/// activity in between (``since(_:)``).
public struct ActivitySample: Sendable, Equatable, Codable {
    /// One thread's counters since it started.
    public struct ThreadCounters: Sendable, Equatable, Codable {
        /// Times the thread was put on a CPU: each wake-up, and each return after being
        /// preempted.
        public var runs: UInt64
        /// Time on a CPU.
        public var cpuTime: Duration

        public init(runs: UInt64, cpuTime: Duration) {
            self.runs = runs
            self.cpuTime = cpuTime
        }
    }

    public var instant: MonotonicInstant
    /// By thread id.
    public var threads: [Int32: ThreadCounters]
    /// Whether some threads were left unread (a bound was reached).
    public var truncated: Bool

    public init(instant: MonotonicInstant, threads: [Int32: ThreadCounters], truncated: Bool = false) {
        self.instant = instant
        self.threads = threads
        self.truncated = truncated
    }

    /// The activity between an earlier reading and this one. A thread that appeared in
    /// between counts from its start; one that ended in between takes its last moments with
    /// it (they are not counted); a thread id reused by a new thread (counters lower than
    /// before) counts as new.
    public func since(_ earlier: ActivitySample) -> Activity {
        var runs: UInt64 = 0
        var cpu = Duration.zero
        for (thread, now) in threads {
            let before = earlier.threads[thread]
            if let before, before.runs <= now.runs, before.cpuTime <= now.cpuTime {
                runs += now.runs - before.runs
                cpu += now.cpuTime - before.cpuTime
            } else {
                runs += now.runs
                cpu += now.cpuTime
            }
        }
        return Activity(interval: instant - earlier.instant, runs: runs, cpuTime: cpu)
    }
}

/// What a group of processes did over an interval.
public struct Activity: Sendable, Equatable, Codable, CustomStringConvertible {
    public var interval: Duration
    /// Times its threads were put on a CPU (about one per wake-up).
    public var runs: UInt64
    public var cpuTime: Duration

    public init(interval: Duration, runs: UInt64, cpuTime: Duration) {
        self.interval = interval
        self.runs = runs
        self.cpuTime = cpuTime
    }

    /// Runs per second of the interval (0 for an empty interval).
    public var runsPerSecond: Double { interval > .zero ? Double(runs) / interval.seconds : 0 }

    /// CPU time per second of the interval: 10 ms/s is 1 % of one CPU.
    public var cpuPerSecond: Duration { interval > .zero ? cpuTime * (1 / interval.seconds) : .zero }

    /// `52.0 wake-ups/s, 1.10 ms CPU/s over 5.00 s`.
    public var description: String {
        func fixed(_ value: Double, _ digits: Int) -> String {
            let scale = (0..<digits).reduce(1.0) { value, _ in value * 10 }
            let rounded = (value * scale).rounded() / scale
            var text = "\(rounded)"
            let decimals = text.split(separator: ".").last?.count ?? 0
            if decimals < digits { text += String(repeating: "0", count: digits - decimals) }
            return text
        }
        return "\(fixed(runsPerSecond, 1)) wake-ups/s, \(fixed(cpuPerSecond.seconds * 1000, 2)) ms CPU/s over \(fixed(interval.seconds, 2)) s"
    }
}

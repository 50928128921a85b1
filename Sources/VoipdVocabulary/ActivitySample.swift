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
        /// Time spent runnable, waiting for a CPU (the kernel adds each wait when the thread
        /// is put on a CPU, so a wait counts with the run that ends it).
        public var waiting: Duration

        public init(runs: UInt64, cpuTime: Duration, waiting: Duration = .zero) {
            self.runs = runs
            self.cpuTime = cpuTime
            self.waiting = waiting
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
        let interval = instant - earlier.instant
        var activity = Activity(interval: interval, runs: 0, cpuTime: .zero)
        for (thread, now) in threads {
            var part = now
            if let before = earlier.threads[thread], before.runs <= now.runs, before.cpuTime <= now.cpuTime, before.waiting <= now.waiting {
                part = ThreadCounters(runs: now.runs - before.runs, cpuTime: now.cpuTime - before.cpuTime, waiting: now.waiting - before.waiting)
            }
            activity.runs += part.runs
            activity.cpuTime += part.cpuTime
            activity.waiting += part.waiting
            activity.unstarvedRuns += Self.unstarvedRuns(part, over: interval)
        }
        return activity
    }

    /// A thread's runs as they would have been had it not waited for a CPU: scaled by the
    /// part of `interval` it slept (neither waiting nor running). A thread that sleeps a
    /// fixed time between wake-ups (linphonec's 10 ms loops) wakes as often per second of
    /// sleep however long it waits for a CPU; per second of the interval, a loaded machine
    /// slows it down. A thread that barely slept counts at most 1000 times its runs.
    static func unstarvedRuns(_ part: ThreadCounters, over interval: Duration) -> Double {
        guard part.runs > 0, interval > .zero else { return 0 }
        let slept = max(interval - part.waiting - part.cpuTime, interval / 1000)
        return Double(part.runs) * (interval / slept)
    }
}

/// What a group of processes did over an interval.
public struct Activity: Sendable, Equatable, Codable, CustomStringConvertible {
    public var interval: Duration
    /// Times its threads were put on a CPU (about one per wake-up).
    public var runs: UInt64
    public var cpuTime: Duration
    /// Time its threads spent runnable, waiting for a CPU.
    public var waiting: Duration
    /// Its runs, each thread's scaled up by the time it waited for a CPU (see
    /// ``ActivitySample/since(_:)``): how often it would have run on an idle machine.
    public var unstarvedRuns: Double

    public init(interval: Duration, runs: UInt64, cpuTime: Duration, waiting: Duration = .zero, unstarvedRuns: Double? = nil) {
        self.interval = interval
        self.runs = runs
        self.cpuTime = cpuTime
        self.waiting = waiting
        self.unstarvedRuns = unstarvedRuns ?? Double(runs)
    }

    /// Runs per second of the interval (0 for an empty interval).
    public var runsPerSecond: Double { interval > .zero ? Double(runs) / interval.seconds : 0 }

    /// Unstarved runs per second of the interval: what a wake-up threshold is held against,
    /// so that a program does not look quieter because the machine is busy.
    public var unstarvedRunsPerSecond: Double { interval > .zero ? unstarvedRuns / interval.seconds : 0 }

    /// CPU time per second of the interval: 10 ms/s is 1 % of one CPU.
    public var cpuPerSecond: Duration { interval > .zero ? cpuTime * (1 / interval.seconds) : .zero }

    /// Time waiting for a CPU per second of the interval, all threads together.
    public var waitingPerSecond: Duration { interval > .zero ? waiting * (1 / interval.seconds) : .zero }

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
        let base = "\(fixed(runsPerSecond, 1)) wake-ups/s, \(fixed(cpuPerSecond.seconds * 1000, 2)) ms CPU/s over \(fixed(interval.seconds, 2)) s"
        guard waiting > .zero, interval > .zero else { return base }
        return base + ", waiting \(fixed(waiting.seconds * 1000 / interval.seconds, 2)) ms/s for a CPU (\(fixed(unstarvedRunsPerSecond, 1)) wake-ups/s unstarved)"
    }
}

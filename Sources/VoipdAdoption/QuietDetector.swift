import VoipdVocabulary

/// When a program that does not talk to voipd counts as quiet enough to be suspended again:
/// over a whole window, fewer wake-ups and less CPU time than these, nothing unread on its
/// adopted sockets, and not starved of a CPU (``QuietDetector/starvedWaitingPerSecond``).
/// Wake-ups are counted as they would have been had its threads not waited for a CPU (``Activity/unstarvedRunsPerSecond``): under load a program that polls
/// wakes less often per second, and linphonec in a call would fall below the threshold that
/// splits its idle from its calls. The defaults come from measurements (docs/BENCHMARKS.md,
/// "Unmodified softphones, idle"): baresip registered and idle wakes about once a minute,
/// and in a call over 200 times a second; an audio thread alone, at one packet every 20 ms,
/// wakes 50 times a second, over twice the default. linphonec polls every 10 ms even when
/// idle (about 100 wake-ups a second, 200 in a call): with these defaults it is never
/// quiet; an app manifest can raise the threshold for it (150 splits its idle from its calls).
public struct QuietThresholds: Hashable, Sendable, Codable {
    /// How long the program must stay below both rates.
    public var window: Duration
    /// Wake-ups (times its threads were put on a CPU) per second, all threads together,
    /// each thread's counted as if it had not waited for a CPU (``Activity/unstarvedRunsPerSecond``).
    public var wakeupsPerSecond: Double
    /// CPU time per second, all threads together (20 ms/s is 2 % of one CPU).
    public var cpuPerSecond: Duration

    public init(window: Duration = .seconds(5), wakeupsPerSecond: Double = 20, cpuPerSecond: Duration = .milliseconds(20)) {
        self.window = window
        self.wakeupsPerSecond = wakeupsPerSecond
        self.cpuPerSecond = cpuPerSecond
    }
}

/// Why a program is not quiet (yet).
public enum QuietVerdict: Equatable, Sendable, CustomStringConvertible {
    /// Below the thresholds over the whole window: it may be suspended.
    case quiet(Activity)
    /// Too active in some part of the window (the busiest part).
    case busy(Activity)
    /// Data, datagrams or connections wait on this many of its adopted sockets: it has work
    /// to do, whatever its activity.
    case unreadData(sockets: Int)
    /// Not yet a window's worth of samples; ask again at this instant.
    case measuring(until: MonotonicInstant)

    public var isQuiet: Bool {
        if case .quiet = self { return true }
        return false
    }

    public var description: String {
        switch self {
        case .quiet(let activity): return "quiet: \(activity)"
        case .busy(let activity): return "busy: \(activity)"
        case .unreadData(let sockets): return "unread data on \(sockets) adopted socket\(sockets == 1 ? "" : "s")"
        case .measuring(let until): return "measuring until \(until)"
        }
    }
}

/// Decides from activity samples of a program's process tree whether it is quiet: the pure
/// half of issue 15's "suspended again when the program is quiet". The caller samples
/// (`ProcFS.activity(of:)`) at an interval of its choosing, typically once a second while the
/// program runs in the background, and feeds each sample with the number of adopted
/// sockets that have something unread; samples older than a window are forgotten.
public struct QuietDetector: Sendable {
    /// Waiting for a CPU this long a second or more, all its threads together, a program is
    /// starved, and whether it is quiet cannot be told: it is judged busy. Its wake-ups are
    /// counted as if it had not waited, but that count falls short when a thread's wait
    /// spans a sample (the kernel adds a wait when it ends): linphonec in a call given a
    /// sliver of a CPU waited 890-1,000 ms a second, and was once judged quiet in CI all the
    /// same. Idle linphonec's 100 wake-ups a second would each have to wait 2.5 ms to reach
    /// this. A machine that busy gains little from stopping it, and a call must not drop.
    public static let starvedWaitingPerSecond = Duration.milliseconds(250)

    public let thresholds: QuietThresholds
    private var samples: [ActivitySample] = []

    public init(thresholds: QuietThresholds = QuietThresholds()) { self.thresholds = thresholds }

    /// Forgets what was seen: after the program was suspended and resumed, activity from
    /// before says nothing.
    public mutating func restart() { samples.removeAll() }

    /// Takes a sample and says whether the program has been quiet over the last window:
    /// below both thresholds in every step between samples (steps shorter than a second are
    /// joined with the next, so that one wake-up in 10 ms does not read as 100 a second). A
    /// burst keeps the program busy until it has slid out of the window.
    public mutating func observe(_ sample: ActivitySample, unreadSockets: Int) -> QuietVerdict {
        if samples.last.map({ sample.instant > $0.instant }) ?? true { samples.append(sample) }
        // Keep the newest sample at least a window old (the start of the window) and those after it.
        let start = (samples.last?.instant ?? sample.instant) - thresholds.window
        if let keep = samples.lastIndex(where: { $0.instant <= start }) { samples.removeFirst(keep) }
        return verdict(unreadSockets: unreadSockets)
    }

    private func verdict(unreadSockets: Int) -> QuietVerdict {
        if unreadSockets > 0 { return .unreadData(sockets: unreadSockets) }
        guard let first = samples.first, let last = samples.last, last.instant - first.instant >= thresholds.window else {
            return .measuring(until: (samples.first?.instant ?? .origin) + thresholds.window)
        }
        var total = Activity(interval: last.instant - first.instant, runs: 0, cpuTime: .zero)
        var busiest: Activity?
        var step = Activity(interval: .zero, runs: 0, cpuTime: .zero)
        // Step by step, so that a thread that lived only between two samples in the middle
        // of the window still counts.
        for (index, (earlier, later)) in zip(samples, samples.dropFirst()).enumerated() {
            let part = later.since(earlier)
            step.add(part)
            total.add(part, interval: false)
            guard step.interval >= .seconds(1) || index == samples.count - 2 else { continue }
            // Its wake-ups as they would have been on an idle machine: a program kept waiting
            // for a CPU (linphonec in a call beside busier programs) wakes less often per
            // second without being any less busy.
            if step.unstarvedRunsPerSecond > thresholds.wakeupsPerSecond || step.cpuPerSecond > thresholds.cpuPerSecond
                || step.waitingPerSecond >= Self.starvedWaitingPerSecond,
               busiest.map({ step.unstarvedRunsPerSecond > $0.unstarvedRunsPerSecond || step.cpuPerSecond > $0.cpuPerSecond
                   || step.waitingPerSecond > $0.waitingPerSecond }) ?? true {
                busiest = step
            }
            step = Activity(interval: .zero, runs: 0, cpuTime: .zero)
        }
        return busiest.map(QuietVerdict.busy) ?? .quiet(total)
    }
}

extension Activity {
    /// Adds a later part's counters (and its interval, unless `interval` is false).
    mutating func add(_ part: Activity, interval: Bool = true) {
        if interval { self.interval += part.interval }
        runs += part.runs
        cpuTime += part.cpuTime
        waiting += part.waiting
        unstarvedRuns += part.unstarvedRuns
    }
}

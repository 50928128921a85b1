import FoundationEssentials
import Glibc

/// Where the resume rate limiter's work period applies (seed 003 describes both).
public enum ResumeLimiterPlacement: String, Codable, Hashable, Sendable {
    /// iOS 7: "the work period was applied after the task completes": a resume or relaunch
    /// of the app for its sessions' events waits until the work period has passed since the
    /// previous one; events arriving meanwhile are delivered together with it. Challenges
    /// wait too.
    case delayResumes
    /// iOS 8 and later: "the work period is applied /before/ a new task starts": the app is
    /// resumed as soon as its events are coalesced (a challenge at once), but a task it
    /// creates while resumed for them does not start before the work period has passed.
    case delayNewTasks
}

/// The shape of the resume rate limiter's curve. Each resume or relaunch of an app for its
/// sessions' events raises the app's level by one; the work period at level `n ≥ 1` is
/// `min(maximumPeriod, initialPeriod × growthFactor^(n−1))` (level 0: none). The level falls
/// by one each time the app is left alone for `decayFactor` × its current period, and to 0
/// when the app comes to the foreground. Seed 003: nsurlsessiond "still maintains a minimum
/// period for background work. It still doubles that work period every time it resumes
/// (or relaunches) your app. It still resets that work period when the user brings your app
/// to the front." The values are not Apple's, which are "deliberately undocumented".
public struct ResumeLimiterCurve: Codable, Hashable, Sendable {
    public var initialPeriod: Double = 10
    public var growthFactor: Double = 2
    public var maximumPeriod: Double = 3600
    /// At least 1, so the level never decays before the work period itself has passed.
    public var decayFactor: Double = 2
    /// Events arriving within this of the first undelivered one go in the same delivery
    /// ("Events that arrive close together are delivered in one resume").
    public var coalescingWindow: Double = 2
    public var placement: ResumeLimiterPlacement = .delayResumes

    public init() {}

    public init(initialPeriod: Double, growthFactor: Double = 2, maximumPeriod: Double, decayFactor: Double = 2,
                coalescingWindow: Double, placement: ResumeLimiterPlacement = .delayResumes) {
        self.initialPeriod = initialPeriod
        self.growthFactor = growthFactor
        self.maximumPeriod = maximumPeriod
        self.decayFactor = decayFactor
        self.coalescingWindow = coalescingWindow
        self.placement = placement
    }

    /// The work period at `level`.
    public func period(atLevel level: Int) -> Double {
        guard level > 0 else { return 0 }
        return min(maximumPeriod, initialPeriod * pow(growthFactor, Double(level - 1)))
    }

    /// The first level whose period is the maximum: the level stops rising there, so that
    /// decaying from the top takes as long as from the first level at the cap.
    public var topLevel: Int {
        guard initialPeriod < maximumPeriod, growthFactor > 1 else { return 1 }
        return Int((log(maximumPeriod / initialPeriod) / log(growthFactor)).rounded(.up)) + 1
    }

    /// Why the curve cannot be used, if it cannot.
    public var problem: String? {
        if !(initialPeriod.isFinite && initialPeriod > 0) { return "initialPeriod must be more than 0" }
        if !(growthFactor.isFinite && growthFactor >= 1) { return "growthFactor must be at least 1" }
        if !(maximumPeriod.isFinite && maximumPeriod >= initialPeriod) { return "maximumPeriod must be at least initialPeriod" }
        if !(decayFactor.isFinite && decayFactor >= 1) { return "decayFactor must be at least 1" }
        if !(coalescingWindow.isFinite && coalescingWindow >= 0) { return "coalescingWindow must be 0 or more" }
        return nil
    }
}

/// One app's resume rate limiter: how often voipd has resumed or relaunched it for its
/// sessions' events, as a level on a ``ResumeLimiterCurve``.
public struct ResumeRateLimiter: Codable, Hashable, Sendable {
    public private(set) var level = 0
    public private(set) var lastResume: Date?

    public init() {}

    /// The level at `now`, after the decay of the time the app was left alone.
    public func level(at now: Date, curve: ResumeLimiterCurve) -> Int {
        guard let lastResume else { return 0 }
        var quiet = now.timeIntervalSince(lastResume)
        var current = level
        while current > 0 {
            let step = curve.decayFactor * curve.period(atLevel: current)
            guard quiet >= step else { break }
            quiet -= step
            current -= 1
        }
        return current
    }

    /// The work period in force at `now`.
    public func period(at now: Date, curve: ResumeLimiterCurve) -> Double {
        curve.period(atLevel: level(at: now, curve: curve))
    }

    /// The earliest a next resume may happen under ``ResumeLimiterPlacement/delayResumes``:
    /// the work period after the last one (decay cannot shorten it, as it needs longer).
    public func earliestResume(curve: ResumeLimiterCurve) -> Date? {
        guard let lastResume, level > 0 else { return nil }
        return lastResume.addingTimeInterval(curve.period(atLevel: level))
    }

    /// A resume or relaunch happened at `now`.
    public mutating func recordResume(at now: Date, curve: ResumeLimiterCurve) {
        level = min(level(at: now, curve: curve) + 1, curve.topLevel)
        lastResume = now
    }

    /// The resume recorded last happened at `now`, later than it was recorded: it is
    /// decided first, and performed once the records it changed are durable (an `fdatasync`
    /// or two later, longer on a busy disk). The work period, and the decay, count from the
    /// resume itself; counted from the decision, two resumes would come closer together than
    /// the work period whenever the first one's records took longer to write.
    public mutating func resumeHappened(at now: Date) {
        guard let lastResume, level > 0, now > lastResume else { return }
        self.lastResume = now
    }

    /// The app came to the foreground.
    public mutating func reset() {
        level = 0
        lastResume = nil
    }
}

/// How soon a task that failed on the network is tried again: `initialDelay` after the first
/// failure in a row, multiplied by `growthFactor` after each further one, at most
/// `maximumDelay`. A network change tries again at once.
public struct RetryCurve: Codable, Hashable, Sendable {
    public var initialDelay: Double = 1
    public var growthFactor: Double = 2
    public var maximumDelay: Double = 300

    public init() {}

    public init(initialDelay: Double, growthFactor: Double = 2, maximumDelay: Double) {
        self.initialDelay = initialDelay
        self.growthFactor = growthFactor
        self.maximumDelay = maximumDelay
    }

    /// The delay after `failures` failures in a row (≥ 1).
    public func delay(afterFailures failures: Int) -> Double {
        min(maximumDelay, initialDelay * pow(growthFactor, Double(max(failures, 1) - 1)))
    }
}

/// The transfer service's settings. Every duration is in seconds; ``scaled(by:)`` shrinks
/// them together for tests. docs/TRANSFERS.md gives the reasons for each default.
public struct TransferConfiguration: Codable, Hashable, Sendable {
    /// Attempts running at once, all apps together.
    public var maximumConcurrentTransfers = 8
    /// Attempts running at once to one host (URLSession's `httpMaximumConnectionsPerHost`).
    public var maximumConcurrentTransfersPerHost = 4
    public var resumeLimiter = ResumeLimiterCurve()
    public var retry = RetryCurve()
    /// Bytes per budget window on any network kind not named in `dailyBudgetByNetwork`; nil
    /// for no budget (seed 003: "Last I checked that's around 5 GB per day").
    public var dailyBudget: Int64? = 5_000_000_000
    /// Budgets of particular network kinds ("wifi", "cellular"…), overriding `dailyBudget`;
    /// a negative value means none for that kind.
    public var dailyBudgetByNetwork: [String: Int64] = [:]
    /// The length of a budget window (a day).
    public var budgetWindow: Double = 24 * 3600
    /// Sessions one app may have.
    public var maximumSessionsPerApp = 16
    /// Tasks one app may have that have not ended and been handed over.
    public var maximumTasksPerApp = 1000
    /// Events handed over in one delivery; the rest follow in the next (a delivery is one
    /// frame of the control protocol).
    public var maximumEventsPerDelivery = 64
    /// The agent reports an attempt's progress at most this often.
    public var progressInterval: Double = 0.5
    /// Session options of a session opened without them.
    public var defaultOptions = TransferOptions()

    public init() {}

    /// The budget of `kind`, nil for none.
    public func budget(for kind: NetworkKind) -> Int64? {
        if let specific = dailyBudgetByNetwork[kind.rawValue] { return specific < 0 ? nil : specific }
        return dailyBudget
    }

    /// Every duration multiplied by `factor` (e.g. 0.01 in tests); the resource and request
    /// timeouts of sessions opened later included.
    public func scaled(by factor: Double) -> TransferConfiguration {
        var c = self
        c.resumeLimiter.initialPeriod *= factor
        c.resumeLimiter.maximumPeriod *= factor
        c.resumeLimiter.coalescingWindow *= factor
        c.retry.initialDelay *= factor
        c.retry.maximumDelay *= factor
        c.budgetWindow *= factor
        c.progressInterval *= factor
        c.defaultOptions.timeoutIntervalForResource *= factor
        c.defaultOptions.timeoutIntervalForRequest *= factor
        return c
    }

    /// Why the configuration cannot be used, naming the key, if it cannot.
    public var problem: String? {
        if maximumConcurrentTransfers < 1 { return "maximumConcurrentTransfers must be at least 1" }
        if maximumConcurrentTransfersPerHost < 1 { return "maximumConcurrentTransfersPerHost must be at least 1" }
        if let problem = resumeLimiter.problem { return "resumeLimiter: \(problem)" }
        if !(retry.initialDelay.isFinite && retry.initialDelay > 0 && retry.growthFactor >= 1 && retry.maximumDelay >= retry.initialDelay) {
            return "retry: initialDelay must be more than 0, growthFactor at least 1, maximumDelay at least initialDelay"
        }
        if let budget = dailyBudget, budget < 0 { return "dailyBudget must be 0 or more" }
        if !(budgetWindow.isFinite && budgetWindow > 0) { return "budgetWindow must be more than 0" }
        if maximumSessionsPerApp < 1 || maximumTasksPerApp < 1 { return "maximumSessionsPerApp and maximumTasksPerApp must be at least 1" }
        if !(1...256).contains(maximumEventsPerDelivery) { return "maximumEventsPerDelivery must be 1…256" }
        if !(progressInterval.isFinite && progressInterval > 0) { return "progressInterval must be more than 0" }
        return nil
    }
}

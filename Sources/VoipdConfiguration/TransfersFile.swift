import VoipdTransfers

/// The `transfers` object of the configuration file (docs/CONFIGURATION.md); every key is
/// optional, durations are in seconds before `timeScale`.
public struct TransfersFile: Codable, Sendable, Equatable {
    public var enabled: Bool?
    /// The transfer agent's path.
    public var agent: String?
    public var maximumConcurrentTransfers: Int?
    public var maximumConcurrentTransfersPerHost: Int?
    public var resumeLimiter: ResumeLimiterFile?
    public var retry: RetryFile?
    /// Bytes per window on any network kind; negative for none.
    public var dailyBudget: Int64?
    /// Per network kind (`wifi`, `cellular`, `ethernet`…); negative for none.
    public var dailyBudgetByNetwork: [String: Int64]?
    public var budgetWindow: Double?
    public var maximumSessionsPerApp: Int?
    public var maximumTasksPerApp: Int?
    public var progressInterval: Double?
    /// Network kinds that are expensive (default `["cellular"]`).
    public var expensiveNetworks: [String]?

    public struct ResumeLimiterFile: Codable, Sendable, Equatable {
        public var initialPeriod: Double?
        public var growthFactor: Double?
        public var maximumPeriod: Double?
        public var decayFactor: Double?
        public var coalescingWindow: Double?
        public var placement: ResumeLimiterPlacement?
    }

    public struct RetryFile: Codable, Sendable, Equatable {
        public var initialDelay: Double?
        public var growthFactor: Double?
        public var maximumDelay: Double?
    }

    public init() {}

    /// The keys the object may have.
    public static let keys: Set<String> = ["enabled", "agent", "maximumConcurrentTransfers", "maximumConcurrentTransfersPerHost",
                                           "resumeLimiter", "retry", "dailyBudget", "dailyBudgetByNetwork", "budgetWindow",
                                           "maximumSessionsPerApp", "maximumTasksPerApp", "progressInterval",
                                           "expensiveNetworks"]

    /// The settings, checked as the engine checks them; the problem names the key.
    public func resolve() -> Result<TransferSettings, HibernationFile.Invalid> {
        var settings = TransferSettings()
        settings.enabled = enabled ?? true
        if let agent {
            guard agent.hasPrefix("/") else { return .failure(.init(key: "agent", message: "must be an absolute path, not \(agent)")) }
            settings.agentExecutable = agent
        }
        if let kinds = expensiveNetworks {
            for kind in kinds where kind.isEmpty || kind.utf8.count > 32
                || !kind.utf8.allSatisfy({ $0 >= 0x61 && $0 <= 0x7a || $0 >= 0x30 && $0 <= 0x39 || $0 == 0x2d }) {
                return .failure(.init(key: "expensiveNetworks", message: "a network kind is 1–32 characters of a–z 0–9 -, not \(kind)"))
            }
            settings.expensiveNetworks = Set(kinds)
        }
        var engine = TransferConfiguration()
        engine.maximumConcurrentTransfers = maximumConcurrentTransfers ?? engine.maximumConcurrentTransfers
        engine.maximumConcurrentTransfersPerHost = maximumConcurrentTransfersPerHost ?? engine.maximumConcurrentTransfersPerHost
        if let limiter = resumeLimiter {
            engine.resumeLimiter.initialPeriod = limiter.initialPeriod ?? engine.resumeLimiter.initialPeriod
            engine.resumeLimiter.growthFactor = limiter.growthFactor ?? engine.resumeLimiter.growthFactor
            engine.resumeLimiter.maximumPeriod = limiter.maximumPeriod ?? engine.resumeLimiter.maximumPeriod
            engine.resumeLimiter.decayFactor = limiter.decayFactor ?? engine.resumeLimiter.decayFactor
            engine.resumeLimiter.coalescingWindow = limiter.coalescingWindow ?? engine.resumeLimiter.coalescingWindow
            engine.resumeLimiter.placement = limiter.placement ?? engine.resumeLimiter.placement
        }
        if let retry {
            engine.retry.initialDelay = retry.initialDelay ?? engine.retry.initialDelay
            engine.retry.growthFactor = retry.growthFactor ?? engine.retry.growthFactor
            engine.retry.maximumDelay = retry.maximumDelay ?? engine.retry.maximumDelay
        }
        if let budget = dailyBudget { engine.dailyBudget = budget < 0 ? nil : budget }
        engine.dailyBudgetByNetwork = dailyBudgetByNetwork ?? engine.dailyBudgetByNetwork
        engine.budgetWindow = budgetWindow ?? engine.budgetWindow
        engine.maximumSessionsPerApp = maximumSessionsPerApp ?? engine.maximumSessionsPerApp
        engine.maximumTasksPerApp = maximumTasksPerApp ?? engine.maximumTasksPerApp
        engine.progressInterval = progressInterval ?? engine.progressInterval
        if let problem = engine.problem {
            let key = problem.prefix { $0 != " " && $0 != ":" }
            return .failure(.init(key: String(key), message: problem))
        }
        settings.engine = engine
        return .success(settings)
    }
}

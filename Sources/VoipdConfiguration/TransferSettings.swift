import VoipdTransfers

/// How voipd runs background transfers: the `transfers` object of the configuration file
/// (docs/CONFIGURATION.md). Durations are scaled by `timeScale` when the service starts.
public struct TransferSettings: Sendable, Equatable {
    /// Off: transfer requests are refused and no agent is ever started.
    public var enabled = true
    /// The engine's settings (limits, the resume rate limiter's curve, budgets).
    public var engine = TransferConfiguration()
    /// The transfer agent (nil: `voipd-transfer` beside voipd).
    public var agentExecutable: String?
    /// The network kinds that are expensive (metered): discretionary tasks, and those that
    /// do not allow expensive networks, wait while the system's network is of one of them.
    public var expensiveNetworks: Set<String> = ["cellular"]

    public init() {}
}

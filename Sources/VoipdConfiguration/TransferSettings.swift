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

    public init() {}
}

/// What the engine has done since it started, for `voipctl stats` (docs/PROTOCOL.md,
/// `stats`): counters only, never written to the store, so they start again with voipd, as
/// Prometheus counters may.
public struct TransferStatistics: Hashable, Sendable {
    /// Bytes attempts moved over the network, sent and received (the bytes a resumed
    /// download kept from earlier attempts are not counted again).
    public var bytes: Int64 = 0
    public var attemptsStarted = 0
    /// Tasks ended, by how: `succeeded`, or the error's kind (`http`, `network`, `timedOut`,
    /// `cancelled`, `file`).
    public var completions: [String: Int] = [:]
    /// Deliveries that had to resume a suspended app, or relaunch one that was not running.
    public var resumes = 0
    public var relaunches = 0

    public init() {}

    /// The label a completion is counted under.
    public static func result(of error: TransferError?) -> String {
        switch error {
        case nil: return "succeeded"
        case .network?: return "network"
        case .http?: return "http"
        case .timedOut?: return "timedOut"
        case .cancelled?: return "cancelled"
        case .file?: return "file"
        }
    }
}

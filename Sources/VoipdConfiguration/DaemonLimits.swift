/// What one user, and one connection, may cost voipd: every client is hostile until proven
/// otherwise, so none may take voipd's descriptors or memory from the others
/// (docs/CONFIGURATION.md, "Limits"; docs/SECURITY.md). Root and the uid voipd runs as are
/// not held to the per-user limits.
public struct DaemonLimits: Sendable, Equatable {
    /// Apps one uid may own, running or not (`voipctl forget` drops one that is not).
    public var appsPerUser = 32
    /// Connections one uid may have open at once.
    public var connectionsPerUser = 64
    /// VoIP sockets voipd may hold for one uid's apps together (each app also has its
    /// own `socketQuota`).
    public var heldSocketsPerUser = 256
    /// A connection that is not an app (no `hello`) and does not follow the event stream is
    /// closed after this long without a request; nil: never.
    public var helloTimeout: Duration? = .seconds(10)
    /// Bytes of replies and events one connection may have waiting for it to read; a
    /// connection over it is closed.
    public var clientQueueBytes = 1 << 20
    /// The same, for all connections together: the one with the most waiting is closed.
    public var totalQueueBytes = 64 << 20

    public init() {}

    /// The names of `limits` in the configuration file and of `--limit NAME=VALUE`.
    public static let names = ["appsPerUser", "connectionsPerUser", "heldSocketsPerUser", "helloTimeout", "clientQueueBytes", "totalQueueBytes"]

    /// The largest count a per-user limit takes.
    static let largestCount = 1_000_000

    /// A copy with `name` set to `value`, or why it cannot be.
    public func setting(_ name: String, _ value: Double) -> Result<DaemonLimits, LimitError> {
        var copy = self
        func count(_ range: ClosedRange<Int>) -> Result<Int, LimitError> {
            guard value.isFinite, value == value.rounded(), value >= Double(range.lowerBound), value <= Double(range.upperBound) else {
                return .failure(LimitError(message: "must be a whole number \(range.lowerBound)…\(range.upperBound), not \(value)"))
            }
            return .success(Int(value))
        }
        switch name {
        case "appsPerUser": return count(1...Self.largestCount).map { copy.appsPerUser = $0; return copy }
        case "connectionsPerUser": return count(1...Self.largestCount).map { copy.connectionsPerUser = $0; return copy }
        case "heldSocketsPerUser": return count(1...Self.largestCount).map { copy.heldSocketsPerUser = $0; return copy }
        case "helloTimeout":
            guard value.isFinite, value >= 0, value <= 86_400 else {
                return .failure(LimitError(message: "must be a number of seconds 0…86400 (0: never), not \(value)"))
            }
            copy.helloTimeout = value == 0 ? nil : .seconds(value)
            return .success(copy)
        case "clientQueueBytes":
            // At least one frame of the largest size must fit.
            return count(65_536...(1 << 30)).map { copy.clientQueueBytes = $0; return copy }
        case "totalQueueBytes": return count(65_536...(1 << 34)).map { copy.totalQueueBytes = $0; return copy }
        default: return .failure(LimitError(message: "unknown limit"))
        }
    }

    /// The value of `name` as the configuration file spells it (seconds, 0 for never).
    public func value(_ name: String) -> Double? {
        switch name {
        case "appsPerUser": return Double(appsPerUser)
        case "connectionsPerUser": return Double(connectionsPerUser)
        case "heldSocketsPerUser": return Double(heldSocketsPerUser)
        case "helloTimeout": return helloTimeout?.seconds ?? 0
        case "clientQueueBytes": return Double(clientQueueBytes)
        case "totalQueueBytes": return Double(totalQueueBytes)
        default: return nil
        }
    }

    public struct LimitError: Error, Sendable {
        public var message: String
    }
}

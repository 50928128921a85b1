/// The base values of RFC 3261's transaction timers (17.1.1.1, table 4 of appendix A).
///
/// Every timer derives from them: A and E (request retransmissions) start at T1 and double,
/// E and G up to T2; B, F, H, J, L and M (timeouts) are 64×T1; D (at least 32 s, taken as
/// 64×T1 so that it scales with T1), I and K absorb retransmissions after the end over UDP
/// and are zero over TCP.
/// Tests may scale them down together.
public struct SIPTimerValues: Hashable, Sendable {
    /// The round-trip time estimate: 500 ms.
    public var t1: Duration
    /// The longest retransmission interval of non-INVITE requests and INVITE responses: 4 s.
    public var t2: Duration
    /// How long a message may stay in the network: 5 s.
    public var t4: Duration

    public init(t1: Duration = .milliseconds(500), t2: Duration = .seconds(4), t4: Duration = .seconds(5)) {
        self.t1 = t1
        self.t2 = t2
        self.t4 = t4
    }

    /// RFC 3261's values.
    public static let standard = SIPTimerValues()

    /// Timers B, F, H, J, L and M: 64×T1 (32 s).
    public var transactionTimeout: Duration { t1 * 64 }
}

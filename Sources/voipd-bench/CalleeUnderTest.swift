import SIP

/// A callee of `voipd-bench sip` (the softphone, baresip) whose log comes to the bench on a
/// pipe or a FIFO.
protocol CalleeUnderTest {
    /// How errors name it: "the softphone", "baresip (alice)".
    var description: String { get }
    /// What its log says once the registrar has accepted its REGISTER.
    static var registeredLine: String { get }
    var log: ChildLog { get }
    /// The kernel's state letter of its process (T: stopped), nil once it is gone.
    var kernelState: Character? { get }
}

extension CalleeUnderTest {
    /// Waits for its log to say that the registrar accepted its REGISTER.
    func waitUntilRegistered(milliseconds: Int32) throws {
        do {
            try log.waitForLine(containing: Self.registeredLine, milliseconds: milliseconds)
        } catch {
            throw BenchError("\(description) did not register: \(error); its log ends:\n\(log.tail)")
        }
    }

    /// Reads what it has logged without waiting (between calls: a full pipe would block it).
    func drain() throws { try log.drain() }

    var logTail: String { log.tail }
}

extension SoftphoneModes {
    /// Call `index` of a measurement to `callee` in `mode`, nil for a callee
    /// voipd does not supervise: an OPTIONS it answers in the foreground first (proof that it
    /// is idle in its loop, and the same recent SIP work in every mode), the move into its
    /// mode, then INVITE → 180 in nanoseconds; after a suspended call, until voipd has
    /// suspended it again. Its log is drained either way; a failure ends with its log.
    func measureCall(_ index: Int, to callee: some CalleeUnderTest, in mode: Mode?, modeName: String,
                     connection: CallerConnection, configuration: SIPCaller.Configuration) throws -> UInt64 {
        do {
            let probe = ReachabilityProbe(connection: connection, configuration: configuration)
            switch mode {
            case nil:
                try probe.run()
            case .running:
                try enter(.running)
                try probe.run()
            case .suspended:
                try probe.run()
                // Background, then stopped (for an adopted program: once voipd has measured it quiet).
                try enter(.suspended)
                let state = callee.kernelState
                guard state == "T" else { throw BenchError("\(callee.description) is in kernel state \(state.map(String.init) ?? "gone"), not T") }
            }
            let latency = try TimedCall(connection: connection, configuration: configuration).run()
            if mode == .suspended { try waitForSuspensionAfterCall() }
            try callee.drain()
            return latency
        } catch {
            try? callee.drain()
            throw BenchError("call \(index + 1) (\(modeName)): \(error)\n\(callee.description)'s log ends:\n\(callee.logTail)")
        }
    }
}

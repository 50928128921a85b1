import SIP
import VoipdSystem
import VoipdVocabulary

/// One call from the bench to the softphone, driven by `SIPCaller`: the INVITE is written
/// at t0, the read that brings the 180 Ringing returns at t1; then the call is completed
/// as a real one would be (ACK for the 200 OK, BYE at once, the 200 to the BYE), so that
/// no transaction or dialog lingers into the next call.
struct TimedCall {
    let connection: CallerConnection
    let configuration: SIPCaller.Configuration
    /// How long a whole call may take.
    static let timeout: Duration = .seconds(10)
    private static let ringing = Array("SIP/2.0 180 ".utf8)

    /// INVITE written → 180 read, in nanoseconds.
    func run() throws -> UInt64 {
        var caller = SIPCaller(configuration: configuration)
        let placed = caller.call()
        guard case .send(let invite)? = placed.first else { throw BenchError("SIPCaller did not send an INVITE: \(placed)") }
        // Serialised before t0: only the network path is timed.
        let bytes = invite.serialized()
        let sent = MonotonicInstant.now
        let t0 = sent.nanoseconds
        try connection.send(bytes)
        let deadline = sent + Self.timeout
        // Raw reads until the 180's start line: the state machine sees everything after.
        let t1 = try connection.readUntil(Self.ringing, before: deadline, waitingFor: "180 Ringing")
        var rang = false
        while caller.outcome == nil {
            let message = try connection.next(before: deadline, waitingFor: awaited(caller.state))
            var actions = caller.receive(message)
            while !actions.isEmpty {
                let action = actions.removeFirst()
                switch action {
                case .send(let outgoing):
                    try connection.send(outgoing.serialized())
                case .report(.response(statusCode: 180, _, method: .invite)):
                    rang = true
                case .report(.answered):
                    // Hung up at once: the 180 is what is measured, the rest only has to end.
                    actions += caller.hangUp()
                case .report(.ended(.notAnswered(let status))):
                    throw BenchError("the call was not answered (\(status.map(String.init) ?? "no final response"))")
                case .report, .log, .startTimer, .cancelTimer:
                    break
                }
            }
        }
        // The bytes seen at t1 were this call's 180.
        guard rang else { throw BenchError("the call was answered without a 180 Ringing to its INVITE") }
        return t1 - t0
    }

    /// What the caller waits for, for a failure message.
    private func awaited(_ state: SIPCaller.State) -> String {
        switch state {
        case .calling: return "answer to the INVITE"
        case .proceeding: return "final answer to the INVITE"
        case .hangingUp: return "answer to the BYE"
        default: return "message of the call"
        }
    }
}

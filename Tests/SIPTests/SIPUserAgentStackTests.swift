import SIP
import Testing

/// A user agent over the transaction layer: timeouts reach it as 408s, and a 2xx never
/// acknowledged ends the call.
@Suite struct SIPUserAgentStackTests {
    private let start = ContinuousClock.now
    private let configuration = SIPCallee.Configuration(
        user: "alice", domain: "127.0.0.1:5070", transport: .udp, contactHost: "127.0.0.1", contactPort: 4000, expires: 600,
        answerDelay: .milliseconds(10))

    private func transmitted(_ outputs: [SIPUserAgentStack<SIPCallee, Int>.Output]) -> [SIPMessage] {
        outputs.compactMap { if case .transmit(let message, _) = $0 { message } else { nil } }
    }

    private func events(_ outputs: [SIPUserAgentStack<SIPCallee, Int>.Output]) -> [SIPCallee.Event] {
        outputs.compactMap { if case .report(let event) = $0 { event } else { nil } }
    }

    @Test func aRegisterThatIsNeverAnsweredFailsWith408AndIsTriedAgain() throws {
        var stack = SIPUserAgentStack(SIPCallee(configuration: configuration), transport: .udp, outbound: 1)
        let register = try #require(transmitted(stack.apply(at: start) { $0.register() }).first)
        #expect(register.topVia?.transport == "UDP" && register.topVia?.port == 4000 && register.topVia?.parameters.contains("rport") == true)
        #expect(register.headers["Contact"] == "<sip:alice@127.0.0.1:4000;transport=udp>")
        var retransmissions = 0
        var outputs: [SIPUserAgentStack<SIPCallee, Int>.Output] = []
        while let deadline = stack.nextDeadline(), deadline <= start + .seconds(40) {
            let fired = stack.expire(at: deadline)
            retransmissions += transmitted(fired).count
            outputs += fired
        }
        #expect(retransmissions == 10)
        #expect(events(outputs) == [.registrationFailed(statusCode: 408)])
        #expect(outputs.contains { if case .startTimer(.registrationRetry, let delay) = $0 { delay == .seconds(1) } else { false } })
        let again = transmitted(stack.timerFired(.registrationRetry, at: start + .seconds(33)))
        #expect(again.first?.method == .register && again.first?.cseq?.number == 2)
    }

    @Test func anAnswerNeverAcknowledgedEndsTheCallWithABye() throws {
        var stack = SIPUserAgentStack(SIPCallee(configuration: configuration), transport: .udp, outbound: 1)
        let register = try #require(transmitted(stack.apply(at: start) { $0.register() }).first)
        _ = stack.receive(register.answered(200), from: 1, at: start)
        let invite = try Fixtures.invite()
        let ringing = stack.receive(invite, from: 1, at: start)
        #expect(transmitted(ringing).map(\.statusCode) == [100, 180])
        let answered = transmitted(stack.timerFired(.answer, at: start + .milliseconds(10)))
        #expect(answered.map(\.statusCode) == [200])
        var outputs: [SIPUserAgentStack<SIPCallee, Int>.Output] = []
        while let deadline = stack.nextDeadline(), deadline <= start + .seconds(33) {
            outputs += stack.expire(at: deadline)
        }
        let sent = transmitted(outputs)
        #expect(sent.filter { $0.statusCode == 200 }.count == 10, "the 2xx, again and again")
        #expect(sent.last?.method == .bye, "then a BYE: RFC 3261 13.3.1.4")
        #expect(stack.agent.callState == .hangingUp(callID: "call-1@bob.invalid"))
    }
}

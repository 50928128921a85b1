@testable import SIP
import Testing

/// The transaction layer's timers (RFC 3261 17) on a simulated clock: what is sent again,
/// when, and what times out, over UDP and over TCP.
@Suite struct SIPTransactionTests {
    typealias Layer = SIPTransactions<Int>
    private let start = ContinuousClock.now
    private let peer = 7

    private func at(_ seconds: Double) -> ContinuousClock.Instant { start + .seconds(seconds) }

    /// Runs every timer due until `seconds`, each at its own deadline; the outputs with the
    /// time (seconds since `start`) they came at.
    private func advance(_ layer: inout Layer, to seconds: Double) -> [(time: Double, output: Layer.Output)] {
        var happened: [(Double, Layer.Output)] = []
        while let deadline = layer.nextDeadline(), deadline <= at(seconds) {
            let time = Double((deadline - start) / .milliseconds(1)) / 1000
            happened += layer.expire(at: deadline).map { (time, $0) }
        }
        return happened
    }

    private func transmitTimes(_ happened: [(time: Double, output: Layer.Output)]) -> [Double] {
        happened.compactMap { if case .transmit = $0.output { ($0.time * 1000).rounded() / 1000 } else { nil } }
    }

    private func delivered(_ outputs: [Layer.Output]) -> [SIPMessage] {
        outputs.compactMap { if case .deliver(let message, _) = $0 { message } else { nil } }
    }

    private func transmitted(_ outputs: [Layer.Output]) -> [SIPMessage] {
        outputs.compactMap { if case .transmit(let message, _) = $0 { message } else { nil } }
    }

    private func request(_ method: SIPMethod, branch: String = "z9hG4bKone", cseq: UInt32 = 1) -> SIPMessage {
        .userAgentRequest(
            method, uri: SIPURI(user: "alice", host: "127.0.0.1", port: 5070), via: "SIP/2.0/UDP 127.0.0.1:4000;branch=\(branch);rport",
            from: "<sip:bob@127.0.0.1>;tag=b", to: "<sip:alice@127.0.0.1>", callID: "call-1", cseq: cseq)
    }

    /// A client transaction: `method` sent to the peer over `transport` at 0.
    private func clientTransaction(_ method: SIPMethod, over transport: SIPTransport = .udp) -> (layer: Layer, request: SIPMessage) {
        var layer = Layer(retransmitsSuccessResponses: true)
        let message = request(method)
        _ = layer.send(message, to: peer, over: transport, at: at(0))
        return (layer, message)
    }

    /// A server INVITE transaction: the INVITE came from the peer over `transport` at 0, and
    /// the user answered `statusCode` at `seconds`.
    private func answeredInvite(_ statusCode: Int, at seconds: Double = 0, over transport: SIPTransport = .udp,
                                retransmitsSuccessResponses: Bool = true) -> (layer: Layer, invite: SIPMessage, answer: SIPMessage) {
        var layer = Layer(retransmitsSuccessResponses: retransmitsSuccessResponses)
        let invite = request(.invite)
        _ = layer.receive(invite, from: peer, over: transport, at: at(0))
        let answer = invite.answered(statusCode)
        _ = layer.send(answer, to: nil, over: transport, at: at(seconds))
        return (layer, invite, answer)
    }

    // MARK: - Client transactions

    @Test func inviteIsRetransmittedOnTimerAUntilAProvisionalResponse() {
        var layer = Layer(retransmitsSuccessResponses: true)
        let invite = request(.invite)
        #expect(transmitted(layer.send(invite, to: peer, over: .udp, at: at(0))) == [invite])
        #expect(transmitTimes(advance(&layer, to: 3.6)) == [0.5, 1.5, 3.5], "A: T1, then doubling")
        let trying = invite.answered(100, toTag: nil)
        #expect(delivered(layer.receive(trying, from: peer, over: .udp, at: at(3.6))) == [trying])
        #expect(advance(&layer, to: 200).filter { if case .transmit = $0.output { true } else { false } }.isEmpty,
                "no retransmission once it rings, and no timer B either")
    }

    @Test func inviteWithoutAnyResponseTimesOutOnTimerBWithA408() throws {
        var layer = clientTransaction(.invite).layer
        let happened = advance(&layer, to: 40)
        #expect(transmitTimes(happened) == [0.5, 1.5, 3.5, 7.5, 15.5, 31.5])
        let timeout = try #require(happened.compactMap { if case .deliver(let message, _) = $0.output { ($0.time, message) } else { nil } }.first)
        #expect(timeout.0 == 32, "timer B: 64×T1")
        #expect(timeout.1.statusCode == 408 && timeout.1.cseq?.method == .invite && timeout.1.callID == "call-1")
        #expect(layer.count == 0)
    }

    @Test func nonInviteIsRetransmittedOnTimerECappedAtT2AndTimesOutOnTimerF() throws {
        var layer = clientTransaction(.register).layer
        let happened = advance(&layer, to: 40)
        #expect(transmitTimes(happened) == [0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5], "E: doubling up to T2 (4 s)")
        let timeouts = happened.compactMap { if case .deliver(let message, _) = $0.output { ($0.time, message.statusCode) } else { nil } }
        #expect(timeouts.count == 1 && timeouts.first?.0 == 32 && timeouts.first?.1 == 408, "timer F: 64×T1")
    }

    @Test func aProvisionalResponseSlowsTimerEToT2() {
        var (layer, bye) = clientTransaction(.bye)
        _ = advance(&layer, to: 0.6)
        _ = layer.receive(bye.answered(180), from: peer, over: .udp, at: at(0.6))
        // The next retransmission was armed for 1.5 s before the 1xx; then every T2.
        #expect(transmitTimes(advance(&layer, to: 10)) == [1.5, 5.5, 9.5])
    }

    @Test func nothingIsRetransmittedOverTCPButRequestsStillTimeOut() throws {
        var layer = clientTransaction(.register, over: .tcp).layer
        let happened = advance(&layer, to: 40)
        #expect(transmitTimes(happened).isEmpty)
        let timeout = try #require(happened.first { if case .deliver = $0.output { true } else { false } })
        #expect(timeout.time == 32)
    }

    @Test func aRetransmittedFailureIsAbsorbedThenAcknowledgedAgainUntilTimerD() {
        var (layer, invite) = clientTransaction(.invite)
        let busy = invite.answered(486)
        #expect(delivered(layer.receive(busy, from: peer, over: .udp, at: at(0.1))) == [busy])
        // The user's ACK belongs to the INVITE's transaction: it goes out and is kept.
        var ack = request(.ack)
        ack.headers.set("To", busy.headers["To"] ?? "")
        #expect(transmitted(layer.send(ack, to: peer, over: .udp, at: at(0.1))) == [ack])
        let again = layer.receive(busy, from: peer, over: .udp, at: at(0.6))
        #expect(delivered(again).isEmpty, "the user sees the failure once")
        #expect(transmitted(again) == [ack], "a retransmitted failure is acknowledged again")
        _ = advance(&layer, to: 32.2)
        #expect(layer.count == 0, "timer D ended the transaction")
        #expect(transmitTimes(advance(&layer, to: 40)).isEmpty)
    }

    @Test func aSecond2xxReachesTheUserWhichAcknowledgesEachOne() {
        var (layer, invite) = clientTransaction(.invite)
        let ok = invite.answered(200)
        #expect(delivered(layer.receive(ok, from: peer, over: .udp, at: at(0.2))) == [ok])
        #expect(delivered(layer.receive(ok, from: peer, over: .udp, at: at(0.7))) == [ok], "RFC 6026: 2xx retransmissions pass")
        #expect(transmitTimes(advance(&layer, to: 40)).isEmpty)
        #expect(layer.count == 0, "timer M ended it")
    }

    @Test func aRetransmittedFinalResponseToANonInviteIsAbsorbedUntilTimerK() {
        var (layer, register) = clientTransaction(.register)
        let ok = register.answered(200)
        #expect(delivered(layer.receive(ok, from: peer, over: .udp, at: at(0.1))) == [ok])
        #expect(delivered(layer.receive(ok, from: peer, over: .udp, at: at(1))).isEmpty)
        _ = advance(&layer, to: 5.2)
        #expect(layer.count == 0, "timer K: T4")
    }

    // MARK: - Server transactions

    @Test func aRetransmittedRequestGetsTheLastResponseAgainUntilTimerJ() {
        var layer = Layer(retransmitsSuccessResponses: true)
        let options = request(.options)
        #expect(delivered(layer.receive(options, from: peer, over: .udp, at: at(0))) == [options])
        #expect(delivered(layer.receive(options, from: peer, over: .udp, at: at(0.2))).isEmpty, "absorbed before the answer")
        let ok = options.answered(200)
        #expect(transmitted(layer.send(ok, to: nil, over: .udp, at: at(0.3))) == [ok], "to the flow the request came from")
        let again = layer.receive(options, from: peer, over: .udp, at: at(0.8))
        #expect(delivered(again).isEmpty && transmitted(again) == [ok])
        _ = advance(&layer, to: 32.4)
        #expect(layer.count == 0, "timer J: 64×T1")
        #expect(delivered(layer.receive(options, from: peer, over: .udp, at: at(33))) == [options])
    }

    @Test func aFailureToInviteIsRetransmittedOnTimerGUntilTheAck() {
        var (layer, _, declined) = answeredInvite(603, at: 1)
        #expect(transmitTimes(advance(&layer, to: 16)) == [1.5, 2.5, 4.5, 8.5, 12.5], "G: T1 doubling up to T2")
        var ack = request(.ack)
        ack.headers.set("To", declined.headers["To"] ?? "")
        #expect(delivered(layer.receive(ack, from: peer, over: .udp, at: at(16))) == [ack], "the first ACK reaches the user")
        #expect(delivered(layer.receive(ack, from: peer, over: .udp, at: at(16.1))).isEmpty, "later ones are absorbed")
        #expect(transmitTimes(advance(&layer, to: 40)).isEmpty)
        #expect(layer.count == 0, "timer I: T4")
    }

    @Test func aFailureNeverAcknowledgedEndsOnTimerH() {
        var (layer, _, declined) = answeredInvite(486, over: .tcp, retransmitsSuccessResponses: false)
        let happened = advance(&layer, to: 40)
        #expect(transmitTimes(happened).isEmpty, "nothing retransmitted over TCP")
        let lost = happened.compactMap { if case .unacknowledged(let response) = $0.output { ($0.time, response) } else { nil } }
        #expect(lost.count == 1 && lost.first?.0 == 32 && lost.first?.1 == declined)
    }

    @Test func aUserAgents2xxIsRetransmittedUntilItsAckWhichHasABranchOfItsOwn() {
        var (layer, invite, ok) = answeredInvite(200)
        #expect(transmitTimes(advance(&layer, to: 4)) == [0.5, 1.5, 3.5])
        #expect(transmitted(layer.receive(invite, from: peer, over: .udp, at: at(4))) == [ok], "an INVITE again gets the 2xx again")
        var ack = request(.ack, branch: "z9hG4bKack")
        ack.headers.set("To", ok.headers["To"] ?? "")
        #expect(delivered(layer.receive(ack, from: peer, over: .udp, at: at(4.2))) == [ack])
        let after = advance(&layer, to: 40)
        #expect(transmitTimes(after).isEmpty)
        #expect(!after.contains { if case .unacknowledged = $0.output { true } else { false } })
    }

    @Test func aUserAgents2xxNeverAcknowledgedIsReportedOnTimerL() {
        var (layer, _, ok) = answeredInvite(200)
        let happened = advance(&layer, to: 40)
        #expect(transmitTimes(happened) == [0.5, 1.5, 3.5, 7.5, 11.5, 15.5, 19.5, 23.5, 27.5, 31.5])
        #expect(happened.contains { if case .unacknowledged(let response) = $0.output { response == ok && $0.time == 32 } else { false } })
    }

    @Test func aProxyDoesNotRetransmit2xx() {
        var layer = answeredInvite(200, retransmitsSuccessResponses: false).layer
        #expect(transmitTimes(advance(&layer, to: 40)).isEmpty)
        #expect(layer.count == 0)
    }

    @Test func scaledTimersScaleEveryTimer() {
        var layer = Layer(timers: SIPTimerValues(t1: .milliseconds(50), t2: .milliseconds(400), t4: .milliseconds(500)), retransmitsSuccessResponses: true)
        _ = layer.send(request(.register), to: peer, over: .udp, at: at(0))
        let happened = advance(&layer, to: 4)
        #expect(transmitTimes(happened) == [0.05, 0.15, 0.35, 0.75, 1.15, 1.55, 1.95, 2.35, 2.75, 3.15])
        #expect(happened.contains { if case .deliver(let message, _) = $0.output { message.statusCode == 408 && $0.time == 3.2 } else { false } })
    }

    @Test func aFullTableDropsNewRequestsAndKeepsServingTheOthers() {
        var layer = Layer(retransmitsSuccessResponses: true, maximumCount: 2)
        #expect(delivered(layer.receive(request(.options, branch: "z9hG4bK1"), from: peer, over: .udp, at: at(0))).count == 1)
        #expect(delivered(layer.receive(request(.options, branch: "z9hG4bK2"), from: peer, over: .udp, at: at(0))).count == 1)
        #expect(delivered(layer.receive(request(.options, branch: "z9hG4bK3"), from: peer, over: .udp, at: at(0))).isEmpty)
        #expect(layer.count == 2)
        _ = advance(&layer, to: 400)
        #expect(layer.count == 0, "unanswered requests are forgotten after the lifetime")
    }

    @Test func aClosedFlowTakesItsTransactionsAlong() {
        var layer = Layer(retransmitsSuccessResponses: true)
        _ = layer.send(request(.register), to: peer, over: .tcp, at: at(0))
        _ = layer.receive(request(.invite, branch: "z9hG4bKin"), from: peer, over: .tcp, at: at(0))
        _ = layer.send(request(.register, branch: "z9hG4bKother"), to: 8, over: .tcp, at: at(0))
        layer.flowClosed(peer)
        #expect(layer.count == 1)
    }
}

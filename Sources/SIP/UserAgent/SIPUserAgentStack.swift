/// A user agent on top of the transaction layer: what a driver runs so that its agent
/// (``SIPCallee``, ``SIPCaller``) works over UDP as over TCP.
///
/// The agent's requests go to the outbound flow (the registrar/proxy, RFC 3261's outbound
/// proxy); its responses go back to the flow their request came from, which may be another
/// (a connection the proxy opened to the phone's listening port). Messages received, timers
/// fired and the layer's timers all come out as ``Output``s, in the order to perform them.
///
/// ```swift
/// var stack = SIPUserAgentStack(SIPCallee(configuration: configuration), transport: .udp, outbound: registrar)
/// perform(stack.apply { $0.register() }, at: .now)
/// // In the loop: perform(stack.receive(message, from: sender, at: .now)) for each message,
/// // perform(stack.timerFired(timer, at: .now)) for each agent timer due, and
/// // perform(stack.expire(at: .now)) once stack.nextDeadline() has passed.
/// ```
public struct SIPUserAgentStack<Agent: SIPUserAgent, Flow: Hashable & Sendable> {
    /// What the driver does.
    public enum Output {
        /// Write this message to `flow`.
        case transmit(SIPMessage, to: Flow)
        /// Arm or replace the agent's timer.
        case startTimer(Agent.Timer, after: Duration)
        /// Disarm the agent's timer.
        case cancelTimer(Agent.Timer)
        /// What the agent reported.
        case report(Agent.Event)
        /// A line for the log (the agent's, or the transaction layer's).
        case log(String)
    }

    /// The user agent.
    public private(set) var agent: Agent
    /// Its transactions.
    public private(set) var transactions: SIPTransactions<Flow>
    /// The transport of every flow.
    public let transport: SIPTransport
    /// Where the agent's requests go.
    public var outbound: Flow

    /// `agent` over `transport`, sending its requests to `outbound`.
    public init(_ agent: Agent, transport: SIPTransport, outbound: Flow, timers: SIPTimerValues = .standard) {
        self.agent = agent
        self.transport = transport
        self.outbound = outbound
        self.transactions = SIPTransactions(timers: timers, retransmitsSuccessResponses: true)
    }

    /// Calls one of the agent's methods (`register()`, `call()`, `hangUp()`…) and returns
    /// what to do.
    public mutating func apply(at now: ContinuousClock.Instant = .now, _ input: (inout Agent) -> [SIPAction<Agent.Timer, Agent.Event>]) -> [Output] {
        perform(input(&agent), at: now)
    }

    /// A message read from `flow`.
    public mutating func receive(_ message: SIPMessage, from flow: Flow, at now: ContinuousClock.Instant = .now) -> [Output] {
        performLayer(transactions.receive(message, from: flow, over: transport, at: now), at: now)
    }

    /// An agent's timer that fired.
    public mutating func timerFired(_ timer: Agent.Timer, at now: ContinuousClock.Instant = .now) -> [Output] {
        perform(agent.timerFired(timer), at: now)
    }

    /// When the transaction layer has something to do next.
    public mutating func nextDeadline() -> ContinuousClock.Instant? { transactions.nextDeadline() }

    /// Runs the transaction layer's timers due at `now`.
    public mutating func expire(at now: ContinuousClock.Instant = .now) -> [Output] {
        performLayer(transactions.expire(at: now), at: now)
    }

    /// `flow`, a connection, has closed: its transactions are gone. When it was the outbound
    /// one, the agent is told it lost its connection.
    public mutating func flowClosed(_ flow: Flow, at now: ContinuousClock.Instant = .now) -> [Output] {
        transactions.flowClosed(flow)
        guard flow == outbound else { return [] }
        return perform(agent.connectionLost(), at: now)
    }

    private mutating func perform(_ actions: [SIPAction<Agent.Timer, Agent.Event>], at now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
        for action in actions {
            switch action {
            case .send(let message):
                let flow: Flow? = message.isRequest ? outbound : nil
                outputs += performLayer(transactions.send(message, to: flow, over: transport, at: now), at: now)
            case .startTimer(let timer, let delay): outputs.append(.startTimer(timer, after: delay))
            case .cancelTimer(let timer): outputs.append(.cancelTimer(timer))
            case .report(let event): outputs.append(.report(event))
            case .log(let text): outputs.append(.log(text))
            }
        }
        return outputs
    }

    private mutating func performLayer(_ layerOutputs: [SIPTransactions<Flow>.Output], at now: ContinuousClock.Instant) -> [Output] {
        var outputs: [Output] = []
        for output in layerOutputs {
            switch output {
            case .transmit(let message, let flow): outputs.append(.transmit(message, to: flow))
            case .deliver(let message, _): outputs += perform(agent.receive(message), at: now)
            case .unacknowledged(let response): outputs += perform(agent.responseUnacknowledged(response), at: now)
            case .note(let text): outputs.append(.log(text))
            }
        }
        return outputs
    }
}

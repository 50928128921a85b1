import SIP

/// A SIP user agent and its transactions (``SIPUserAgentStack``) run over the softphone's
/// ``SIPSockets``: what the phone (``SIPLink``, a ``SIPCallee``) and `softphone call`
/// (``CallCommand``, a ``SIPCaller``) share.
///
/// A step sends each message the stack says to send (logging it once it has left, stamped
/// before the send), arms and cancels the agent's timers in ``timers`` (which also holds the
/// owner's own), and writes the stack's log lines. What needs the owner comes back in a
/// ``Step``: the socket events the sends caused (a failed send closes its flow) and the
/// agent's reports, for the owner to handle once the step is done, since handling them may
/// run another step.
struct SIPAgentDriver<Agent: SIPUserAgent, TimerKey: Hashable> {
    typealias Stack = SIPUserAgentStack<Agent, SIPFlow>

    /// What a step leaves to the owner, each in the order it came.
    struct Step {
        var socketEvents: [SIPSockets.Event] = []
        var reports: [Agent.Event] = []
        /// The messages that left; one whose send failed is a `closed` socket event instead.
        var sent: [SIPMessage] = []
    }

    let sockets: SIPSockets
    /// The agent and its transactions, once the owner has the outbound flow to start them.
    var stack: Stack?
    /// The agent's timers, each as `timerKey` makes it, beside the owner's own.
    var timers = TimerTable<TimerKey>()
    /// The log category of what the driver writes (`sip`, `call`).
    private let category: String
    private let timerKey: (Agent.Timer) -> TimerKey
    private let writesLog: (String) -> Bool

    /// `writesLog` says which of the stack's log lines to write (all by default).
    init(sockets: SIPSockets, logCategory: String, timerKey: @escaping (Agent.Timer) -> TimerKey,
         writesLog: @escaping (String) -> Bool = { _ in true }) {
        self.sockets = sockets
        self.category = logCategory
        self.timerKey = timerKey
        self.writesLog = writesLog
    }

    var agent: Agent? { stack?.agent }

    /// The earliest of the timers and the transactions' deadlines.
    var nextDeadline: ContinuousClock.Instant? {
        mutating get { earliest(timers.earliest, stack?.nextDeadline()) }
    }

    /// Runs one step of the stack, if it has started, and does what it says.
    mutating func perform(_ step: (inout Stack) -> [Stack.Output]) -> Step {
        guard stack != nil else { return Step() }
        var result = Step()
        for output in step(&stack!) {
            switch output {
            case .transmit(let message, let flow):
                let time = Log.timestamp()
                let events = sockets.send(message, to: flow)
                result.socketEvents += events
                if events.isEmpty {
                    Log.write(category, "sent \(message.summary)", at: time)
                    result.sent.append(message)
                }
            case .startTimer(let timer, let delay): timers.arm(timerKey(timer), after: delay)
            case .cancelTimer(let timer): timers.cancel(timerKey(timer))
            case .report(let event): result.reports.append(event)
            case .log(let text): if writesLog(text) { Log.write(category, text) }
            }
        }
        return result
    }
}

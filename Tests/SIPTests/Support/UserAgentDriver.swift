#if canImport(Glibc)
import Glibc
#endif
import SIP

/// Runs a SIPCallee or SIPCaller over a real TCP connection: sends what it asks, keeps its
/// timers as deadlines, feeds it what arrives. `waitUntil` drives several at once.
final class UserAgentDriver<Agent: SIPUserAgent> {
    typealias Action = SIPAction<Agent.Timer, Agent.Event>

    let connection: TestConnection
    private(set) var agent: Agent
    private(set) var events: [Agent.Event] = []
    private(set) var received: [SIPMessage] = []
    private(set) var sent: [SIPMessage] = []
    private(set) var log: [String] = []
    private var timers: [Agent.Timer: ContinuousClock.Instant] = [:]

    init(_ agent: Agent, port: UInt16) throws {
        self.agent = agent
        self.connection = try TestConnection(port: port)
    }

    /// Calls one of the agent's methods and performs what it returns.
    func apply(_ input: (inout Agent) -> [Action]) throws {
        try perform(input(&agent))
    }

    private func perform(_ actions: [Action]) throws {
        for action in actions {
            switch action {
            case .send(let message):
                sent.append(message)
                try connection.send(message)
            case .startTimer(let timer, let delay): timers[timer] = .now + delay
            case .cancelTimer(let timer): timers[timer] = nil
            case .report(let event): events.append(event)
            case .log(let line): log.append(line)
            }
        }
    }
}

/// What `waitUntil` needs from a driver, whatever its agent.
protocol PolledDriver: AnyObject {
    var fd: Int32 { get }
    var isOpen: Bool { get }
    var nextDeadline: ContinuousClock.Instant? { get }
    func fireDueTimers(at now: ContinuousClock.Instant) throws
    func readReady() throws
    var transcript: String { get }
}

extension UserAgentDriver: PolledDriver {
    var fd: Int32 { connection.fd }
    var isOpen: Bool { connection.isOpen }
    var nextDeadline: ContinuousClock.Instant? { timers.values.min() }

    func fireDueTimers(at now: ContinuousClock.Instant) throws {
        for (timer, deadline) in timers where deadline <= now {
            timers[timer] = nil
            try apply { $0.timerFired(timer) }
        }
    }

    func readReady() throws {
        try connection.readAvailable()
        for case .message(let message) in connection.takeItems() {
            received.append(message)
            try apply { $0.receive(message) }
        }
        if !connection.isOpen { try apply { $0.connectionLost() } }
    }

    var transcript: String {
        "sent: \(sent.map(\.summary))\nreceived: \(received.map(\.summary))\nlog: \(log)"
    }
}

/// Drives `drivers` (timers and incoming messages) until `condition` holds, or throws with
/// every driver's transcript after `timeout`.
func waitUntil(
    _ drivers: [any PolledDriver], timeout: Duration = .seconds(5), _ what: String, _ condition: () -> Bool
) throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        let now = ContinuousClock.now
        guard now < deadline else {
            throw TestFailure("timed out waiting until \(what)\n" + drivers.map(\.transcript).joined(separator: "\n---\n"))
        }
        for driver in drivers { try driver.fireDueTimers(at: now) }
        if condition() { return }
        let wake = drivers.compactMap(\.nextDeadline).reduce(deadline, min)
        let open = drivers.filter(\.isOpen)
        var descriptors = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds(wake - .now))
        if ready < 0 && errno != EINTR { throw TestFailure("poll failed: errno \(errno)") }
        for (driver, descriptor) in zip(open, descriptors) where descriptor.revents != 0 {
            try driver.readReady()
        }
    }
}

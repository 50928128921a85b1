#if canImport(Glibc)
import Glibc
#endif
import SIP
import VoipdSystem
import VoipdTestSupport

/// Where a driver's messages go: its one TCP connection, or a UDP address.
enum TestFlow: Hashable, Sendable {
    case connection
    case datagram(SIPSocketAddress)
}

/// Runs a SIPCallee or SIPCaller over a real socket through a ``SIPUserAgentStack``: a TCP
/// connection to the proxy, or a UDP socket bound to an ephemeral loopback port. Sends what
/// it asks, keeps its timers and the transaction layer's as deadlines, feeds it what arrives.
/// `waitUntil` drives several at once.
final class UserAgentDriver<Agent: SIPUserAgent> {
    /// The TCP connection (nil over UDP).
    let connection: TestConnection?
    /// The UDP socket (nil over TCP).
    let datagrams: SIPDatagramSocket?
    private(set) var stack: SIPUserAgentStack<Agent, TestFlow>
    private(set) var events: [Agent.Event] = []
    private(set) var received: [SIPMessage] = []
    private(set) var sent: [SIPMessage] = []
    private(set) var log: [String] = []
    private var timers: [Agent.Timer: ContinuousClock.Instant] = [:]

    var agent: Agent { stack.agent }

    /// `agent` over `transport` to the proxy at 127.0.0.1:`port`. Over UDP, `makeAgent` gets
    /// the port its socket is bound to (for Via and Contact).
    init(transport: SIPTransport = .tcp, port: UInt16, timers: SIPTimerValues = .standard, _ makeAgent: (UInt16?) -> Agent) throws {
        guard let proxy = SIPSocketAddress(numericHost: "127.0.0.1", port: port) else { throw TestFailure("no address") }
        switch transport {
        case .tcp:
            connection = try TestConnection(port: port)
            datagrams = nil
            stack = SIPUserAgentStack(makeAgent(nil), transport: .tcp, outbound: .connection, timers: timers)
        case .udp:
            let socket = try SIPDatagramSocket(binding: proxy.with(port: 0))
            connection = nil
            datagrams = socket
            stack = SIPUserAgentStack(makeAgent(socket.localAddress.port), transport: .udp, outbound: .datagram(proxy), timers: timers)
        }
    }

    convenience init(_ agent: Agent, port: UInt16) throws {
        try self.init(port: port) { _ in agent }
    }

    /// Calls one of the agent's methods and performs what it returns.
    func apply(_ input: (inout Agent) -> [SIPAction<Agent.Timer, Agent.Event>]) throws {
        try perform(stack.apply(input))
    }

    private func perform(_ outputs: [SIPUserAgentStack<Agent, TestFlow>.Output]) throws {
        for output in outputs {
            switch output {
            case .transmit(let message, let flow):
                sent.append(message)
                switch flow {
                case .connection: try connection?.send(message)
                case .datagram(let address): try datagrams?.send(message.serialized(), to: address)
                }
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
    var fd: Int32 { connection?.fd ?? datagrams?.fd ?? -1 }
    var isOpen: Bool { connection?.isOpen ?? true }
    var nextDeadline: ContinuousClock.Instant? {
        let layer = stack.nextDeadline()
        return (Array(timers.values) + [layer].compactMap { $0 }).min()
    }

    func fireDueTimers(at now: ContinuousClock.Instant) throws {
        for (timer, deadline) in timers where deadline <= now {
            timers[timer] = nil
            try perform(stack.timerFired(timer, at: now))
        }
        try perform(stack.expire(at: now))
    }

    func readReady() throws {
        if let connection {
            try connection.readAvailable()
            for case .message(let message) in connection.takeItems() { try deliver(message, from: .connection) }
            if !connection.isOpen { try perform(stack.flowClosed(.connection)) }
        } else if let datagrams {
            while case .datagram(let bytes, let sender) = try datagrams.receive() {
                guard let message = try SIPDatagram.message(in: bytes) else { continue }
                try deliver(message, from: .datagram(sender))
            }
        }
    }

    private func deliver(_ message: SIPMessage, from flow: TestFlow) throws {
        received.append(message)
        try perform(stack.receive(message, from: flow))
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
        let ready = poll(&descriptors, nfds_t(descriptors.count), pollTimeout(after: wake - .now))
        if ready < 0 && errno != EINTR { throw TestFailure("poll failed: errno \(errno)") }
        for (driver, descriptor) in zip(open, descriptors) where descriptor.revents != 0 {
            try driver.readReady()
        }
    }
}

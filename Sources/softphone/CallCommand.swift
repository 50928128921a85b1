import Glibc
import SIP
import VoipdSystem

/// `softphone call`: places one call through the registrar with ``SIPCaller`` over TCP or
/// UDP, prints each message with its time (responses also with the time since the INVITE),
/// hangs up after the hold time, and reports whether the call was answered.
final class CallCommand {
    enum Timer: Hashable {
        case caller(SIPCaller.Timer)
        /// --cancel-after or --timeout: not answered in time.
        case giveUp
        /// The call should be over by now, answered or not.
        case deadline
    }

    let options: CallOptions
    /// The caller and its transactions, and the timers. Each response read is logged by
    /// ``handle(_:)`` with its delay, so not again as the caller's log line.
    private var driver: SIPAgentDriver<SIPCaller, Timer>
    private var inviteSentAt: ContinuousClock.Instant?
    // Time enough, after giving up, for the 487 to the CANCEL and the BYE's answer.
    private static let grace: Duration = .seconds(5)

    init(options: CallOptions) {
        self.options = options
        driver = SIPAgentDriver(sockets: SIPSockets(transport: options.transport), logCategory: "call", timerKey: Timer.caller,
                                writesLog: { !$0.hasPrefix("received ") })
    }

    private var sockets: SIPSockets { driver.sockets }
    private var caller: SIPCaller? { driver.agent }

    /// Runs the call; the exit status (0: answered).
    func run() -> Int32 {
        var configuration = SIPCaller.Configuration(
            target: options.target, user: options.from, domain: options.registrar.description, transport: options.transport,
            holdTime: options.hold)
        let outbound: SIPFlow
        do {
            switch options.transport {
            case .tcp:
                let (flow, events) = try sockets.connectOutbound(to: options.registrar, timeout: .seconds(5))
                outbound = flow
                handle(events)
            case .udp:
                let registrar = try SIPSocketAddress.resolve(host: options.registrar.host, port: options.registrar.port)
                handle(try sockets.openDatagrams(binding: SIPDatagramSocket.localAddress(toward: registrar).with(port: 0), connectingTo: registrar))
                guard let bound = sockets.datagrams?.localAddress else { throw NetworkError("udp", reason: "no socket") }
                configuration.contactHost = bound.uriHost
                configuration.contactPort = bound.port
                outbound = .datagram(registrar)
                Log.write("call", "sending from UDP \(bound) to \(registrar)")
            }
        } catch {
            Log.write("call", "cannot reach the registrar: \(error)")
            return 1
        }
        driver.stack = SIPUserAgentStack(SIPCaller(configuration: configuration), transport: options.transport, outbound: outbound)
        let giveUpAfter = min(options.cancelAfter ?? options.timeout, options.timeout)
        driver.timers.arm(.giveUp, after: giveUpAfter)
        driver.timers.arm(.deadline, after: giveUpAfter + options.hold + Self.grace)
        inviteSentAt = .now
        perform { $0.apply { $0.call() } }
        while caller?.outcome == nil, !sockets.descriptors.isEmpty, waitAndHandle() {}
        return finish()
    }

    /// One wait and what it brought; false when the deadline passed.
    private func waitAndHandle() -> Bool {
        let fds = sockets.descriptors
        var descriptors = fds.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        // A failed or interrupted wait is a turn with nothing ready, as a timeout.
        let ready = (try? poll(&descriptors, timeoutMilliseconds: pollTimeout(until: driver.nextDeadline))) ?? 0
        if ready > 0 {
            for (fd, descriptor) in zip(fds, descriptors) where descriptor.revents != 0 { handle(sockets.readAvailable(fd)) }
        }
        let now = ContinuousClock.now
        perform { $0.expire(at: now) }
        for timer in driver.timers.takeDue(at: now) {
            switch timer {
            case .caller(let callerTimer): perform { $0.timerFired(callerTimer, at: now) }
            case .giveUp where caller?.wasAnswered == false:
                Log.write("call", "not answered in time: cancelling")
                perform { $0.apply { $0.cancel() } }
            case .giveUp: break
            case .deadline: return false
            }
        }
        return true
    }

    private func handle(_ events: [SIPSockets.Event]) {
        for event in events {
            switch event {
            case .message(let message, let flow):
                Log.write("call", "received \(message.summary)\(sinceInvite(message))")
                perform { $0.receive(message, from: flow) }
            case .closed(_, let flow, let reason):
                Log.write("call", "connection lost: \(reason)")
                perform { $0.flowClosed(flow) }
            case .opened:
                break
            case .log(let text):
                Log.write("call", text)
            }
        }
    }

    private func sinceInvite(_ message: SIPMessage) -> String {
        guard message.statusCode != nil, let inviteSentAt else { return "" }
        let milliseconds = (ContinuousClock.now - inviteSentAt) / .milliseconds(1)
        return ", \((milliseconds * 1000).rounded() / 1000) ms after the INVITE"
    }

    private func perform(_ step: (inout SIPUserAgentStack<SIPCaller, SIPFlow>) -> [SIPUserAgentStack<SIPCaller, SIPFlow>.Output]) {
        handle(driver.perform(step).socketEvents)
    }

    private func finish() -> Int32 {
        switch caller?.outcome {
        case .answered?:
            Log.write("call", "the call was answered and has ended")
        case .notAnswered(let status?)?:
            Log.write("call", "the call was not answered: \(status)")
        case .notAnswered(nil)?:
            Log.write("call", "the call was not answered")
        case nil:
            Log.write("call", caller?.wasAnswered == true ? "the call was answered; its end was not confirmed" : "no final answer in time")
        }
        return caller?.wasAnswered == true ? 0 : 1
    }
}

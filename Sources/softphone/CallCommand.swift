import Glibc
import SIP

/// `softphone call`: places one call through the registrar with ``SIPCaller``, prints each
/// message with its time (responses also with the time since the INVITE), hangs up after
/// the hold time, and reports whether the call was answered.
final class CallCommand {
    enum Timer: Hashable {
        case caller(SIPCaller.Timer)
        /// --cancel-after or --timeout: not answered in time.
        case giveUp
        /// The call should be over by now, answered or not.
        case deadline
    }

    let options: CallOptions
    private var caller: SIPCaller
    private var connection: TCPConnection?
    private var framer = SIPStreamFramer()
    private var timers = TimerTable<Timer>()
    private var inviteSentAt: ContinuousClock.Instant?
    // Time enough, after giving up, for the 487 to the CANCEL and the BYE's answer.
    private static let grace: Duration = .seconds(5)

    init(options: CallOptions) {
        self.options = options
        caller = SIPCaller(configuration: SIPCaller.Configuration(
            target: options.target, user: options.from, domain: options.registrar.description, holdTime: options.hold))
    }

    /// Runs the call; the exit status (0: answered).
    func run() -> Int32 {
        do {
            let opened = try TCPConnection.connect(to: options.registrar, timeout: .seconds(5))
            connection = opened
            Log.write("call", "connected to \(opened.remoteAddress) from \(opened.localAddress)")
        } catch {
            Log.write("call", "cannot reach the registrar: \(error)")
            return 1
        }
        let giveUpAfter = min(options.cancelAfter ?? options.timeout, options.timeout)
        timers.arm(.giveUp, after: giveUpAfter)
        timers.arm(.deadline, after: giveUpAfter + options.hold + Self.grace)
        inviteSentAt = .now
        perform(caller.call())
        while caller.outcome == nil, connection != nil, waitAndHandle() {}
        return finish()
    }

    /// One wait and what it brought; false when the deadline passed.
    private func waitAndHandle() -> Bool {
        guard let current = connection else { return false }
        var descriptor = pollfd(fd: current.fd, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, pollTimeout(until: timers.earliest)) > 0 { read(current) }
        for timer in timers.takeDue(at: .now) {
            switch timer {
            case .caller(let callerTimer): perform(caller.timerFired(callerTimer))
            case .giveUp where !caller.wasAnswered:
                Log.write("call", "not answered in time: cancelling")
                perform(caller.cancel())
            case .giveUp: break
            case .deadline: return false
            }
        }
        return true
    }

    private func read(_ current: TCPConnection) {
        switch current.read() {
        case .nothing:
            return
        case .closed(let reason):
            Log.write("call", "connection lost: \(reason)")
            connection = nil
            perform(caller.connectionLost())
        case .bytes(let bytes):
            framer.append(bytes)
            do {
                while let item = try framer.next() {
                    guard case .message(let message) = item else { continue }
                    Log.write("call", "received \(message.summary)\(sinceInvite(message))")
                    perform(caller.receive(message))
                }
            } catch {
                Log.write("call", "unreadable SIP: \(error)")
                connection = nil
            }
        }
    }

    private func sinceInvite(_ message: SIPMessage) -> String {
        guard message.statusCode != nil, let inviteSentAt else { return "" }
        let milliseconds = (ContinuousClock.now - inviteSentAt) / .milliseconds(1)
        return ", \((milliseconds * 1000).rounded() / 1000) ms after the INVITE"
    }

    private func perform(_ actions: [SIPCaller.Action]) {
        for action in actions {
            switch action {
            case .send(let message):
                guard let connection else { continue }
                let time = Log.timestamp()
                do {
                    try connection.send(message.serialized())
                    Log.write("call", "sent \(message.summary)", at: time)
                } catch {
                    Log.write("call", "cannot send \(message.summary): \(error)")
                }
            case .startTimer(let timer, let delay): timers.arm(.caller(timer), after: delay)
            case .cancelTimer(let timer): timers.cancel(.caller(timer))
            case .report: break
            // Each message read is logged already, with its delay.
            case .log(let text) where text.hasPrefix("received "): break
            case .log(let text): Log.write("call", text)
            }
        }
    }

    private func finish() -> Int32 {
        switch caller.outcome {
        case .answered?:
            Log.write("call", "the call was answered and has ended")
        case .notAnswered(let status?)?:
            Log.write("call", "the call was not answered: \(status)")
        case .notAnswered(nil)?:
            Log.write("call", "the call was not answered")
        case nil:
            Log.write("call", caller.wasAnswered ? "the call was answered; its end was not confirmed" : "no final answer in time")
        }
        return caller.wasAnswered ? 0 : 1
    }
}

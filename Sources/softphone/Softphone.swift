import Glibc
import SIP
import VoipClient

/// The softphone under voipd: a SIP user agent whose only way in is the TCP connection it
/// opened for REGISTER, handed to voipd as its VoIP socket "sip", plus an ordinary presence
/// connection that voipd may reclaim.
///
/// One thread, one poll() loop: voipd's control connection, the SIP connection, the
/// presence connection and the timers.
final class Softphone {
    /// The name the SIP connection is registered under with voipd.
    static let sipSocketName = "sip"

    enum Timer: Hashable {
        /// --hang-up-after is over.
        case hangUp
    }

    let options: SoftphoneOptions
    let application: VoIPApplication
    let sip: SIPLink
    let presence: PresenceLink?
    let work: BackgroundWork
    var timers = TimerTable<Timer>()

    /// Connects to voipd (the name and socket come from the environment voipd launched it with).
    init(options: SoftphoneOptions) throws {
        self.options = options
        application = try VoIPApplication()
        sip = SIPLink(registrar: options.registrar, configuration: options.calleeConfiguration)
        presence = options.presence.map { PresenceLink(server: $0, user: options.user, interval: options.presenceInterval) }
        work = BackgroundWork(application: application)
        application.delegate = self
        sip.delegate = self
        work.willExpire = { [unowned self] kind in
            // No time to wait for the BYE's answer: the call is over for us.
            if kind == .call { sip.hangUp() }
        }
    }

    /// Runs until voipd ends the app; the process's exit status.
    func run() -> Int32 {
        start()
        while !application.terminationRequested {
            do {
                try turn()
            } catch let error as VoipdError where error == .disconnected {
                // Only with reconnection turned off.
                Log.write("lifecycle", "voipd closed the control connection; exiting")
                return 1
            } catch {
                Log.write("lifecycle", "exiting: \(error)")
                return 1
            }
        }
        Log.write("lifecycle", "exiting after willTerminate")
        return 0
    }

    private func start() {
        let status = application.initialStatus
        Log.write("lifecycle", "connected to voipd as \(application.name) (pid \(getpid()), \(status.state.rawValue), launch \(status.launches))")
        do {
            try application.setKeepAliveTimeout(options.keepAlive / .seconds(1)) { [unowned self] in keepAliveFired() }
        } catch {
            Log.write("lifecycle", "no keep-alive: \(error)")
        }
        if status.state == .background {
            // Relaunched in the background (by data or a keep-alive): quiescent from the start.
            presence?.pause()
        }
        if let restored = application.takeRestoredSocket(named: Self.sipSocketName) {
            sip.adopt(restored.release())
        } else {
            sip.connectAndRegister()
        }
        presence?.connect()
    }

    /// One wait and what it brought.
    private func turn() throws {
        // Fixed slots; poll() skips a negative descriptor.
        var descriptors = [application.fileDescriptor, sip.fileDescriptor ?? -1, presence?.fileDescriptor ?? -1].map {
            pollfd(fd: $0, events: Int16(POLLIN), revents: 0)
        }
        let timeout = application.hasBufferedMessages ? 0 : pollTimeout(until: nextDeadline)
        if poll(&descriptors, nfds_t(descriptors.count), timeout) < 0 && errno != EINTR {
            throw NetworkError("poll")
        }
        if descriptors[1].revents != 0 { sip.readAvailable() }
        if descriptors[2].revents != 0 { presence?.readAvailable() }
        fireDueTimers()
        if descriptors[0].revents != 0 || application.hasBufferedMessages { try handleEvents() }
    }

    private var nextDeadline: ContinuousClock.Instant? {
        earliest(earliest(timers.earliest, sip.nextDeadline), presence?.nextDeadline)
    }

    private func fireDueTimers() {
        let now = ContinuousClock.now
        sip.fireDueTimers(at: now)
        presence?.fireDueTimers(at: now)
        for timer in timers.takeDue(at: now) {
            switch timer {
            case .hangUp:
                Log.write("sip", "hanging up after \(options.hangUpAfter ?? .zero)")
                sip.hangUp()
            }
        }
    }

    /// Handles voipd's events in order, each acknowledged once handled, as returning from a
    /// UIKit delegate method does.
    private func handleEvents() throws {
        while let event = try application.nextEvent(timeoutMilliseconds: 0) {
            var detail = ""
            if let socket = event.socket {
                detail = " \(socket.name) (\(socket.bytesAvailable) bytes\(socket.peerClosed ? ", peer closed" : ""))"
                // A wake is acknowledged only after the data it announces is read: a call it
                // brings must hold its background task before voipd may suspend the app again.
                sip.readAvailable()
            }
            Log.write("lifecycle", "\(event.kind.rawValue)\(detail), now \(event.state.rawValue): \(event.reason)")
            application.dispatch(event)
            try application.acknowledge(event)
            if application.terminationRequested { return }
        }
    }

    private func keepAliveFired() {
        Log.write("lifecycle", "keep-alive: registering again")
        sip.refreshRegistration()
    }
}

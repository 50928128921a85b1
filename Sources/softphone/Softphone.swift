import Glibc
import SIP
import VoipdSystem
import VoipClient

/// The softphone: a SIP user agent (``SIPLink``) that registers with a registrar and
/// answers the calls that come, plus an ordinary presence connection that voipd may reclaim.
///
/// Under voipd (the default) its SIP sockets are handed to voipd as VoIP sockets, so that
/// anything arriving on them wakes the suspended app, and a keep-alive wakes it to register
/// again before the registrar's grant runs out. With `--unsupervised` it runs on its own,
/// never suspended, and refreshes its registration on its own timer.
///
/// One thread, one poll() loop: voipd's control connection, the SIP sockets, the presence
/// connection and the timers.
final class Softphone {
    enum Timer: Hashable {
        /// --hang-up-after is over.
        case hangUp
    }

    let options: SoftphoneOptions
    /// Nil with `--unsupervised`.
    let application: VoIPApplication?
    let sip: SIPLink
    let presence: PresenceLink?
    let work: BackgroundWork
    var timers = TimerTable<Timer>()
    /// What it reports about itself (logged as `status:` when it changes).
    var status: SoftphoneStatus
    /// The keep-alive interval voipd has now, in the app's seconds (``time``).
    var keepAliveSeconds: Int?
    /// What it told voipd with the keep-alive: how long the registration keeps it reachable
    /// without one, in the app's seconds.
    var keepAliveReachableFor: Int?
    /// The shortest keep-alive voipd permits this app, in whole seconds of the app's (nil:
    /// unsupervised).
    let keepAliveMinimum: Int?
    /// voipd's seconds against real ones (a registrar's grant).
    let time: VoipdTime

    /// Connects to voipd (the name and socket come from the environment voipd launched it
    /// with), unless `--unsupervised`.
    init(options: SoftphoneOptions) throws {
        self.options = options
        application = options.unsupervised ? nil : try VoIPApplication()
        // As voipd says: its configuration or the app's manifest may lower it below 600 s.
        keepAliveMinimum = application.map { VoipdTime.wholeSeconds($0.minimumKeepAliveTimeout) }
        let time = VoipdTime(scale: application?.timeScale ?? 1)
        self.time = time
        sip = SIPLink(settings: options.linkSettings(wakePolicy: keepAliveMinimum.map { options.wakePolicy(keepAliveMinimum: $0, time) }))
        presence = options.presence.map { PresenceLink(server: $0, user: options.user, interval: options.presenceInterval) }
        work = BackgroundWork(application: application)
        status = SoftphoneStatus(transport: options.transport.rawValue, contact: "", supervised: application != nil)
        application?.delegate = self
        sip.delegate = self
        work.willExpire = { [unowned self] kind in
            // No time to wait for the BYE's answer: the call is over for us.
            if kind == .call { sip.hangUp() }
        }
    }

    /// Runs until voipd ends the app (or, unsupervised, until the process is killed); the
    /// process's exit status.
    func run() -> Int32 {
        do {
            try start()
        } catch {
            Log.write("sip", "cannot start: \(error)")
            return 1
        }
        while !(application?.terminationRequested ?? false) {
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

    private func start() throws {
        var restored: [(SIPSocketRole, Int32)] = []
        if let application {
            let initial = application.initialStatus
            Log.write("lifecycle", "connected to voipd as \(application.name) (pid \(getpid()), \(initial.state.rawValue), launch \(initial.launches)); keep-alive minimum \(keepAliveMinimum ?? 600) s")
            setKeepAlive(options.keepAlive)
            if initial.state == .background {
                // Relaunched in the background (by data or a keep-alive): quiescent from the start.
                presence?.pause()
            }
            restored = takeRestoredSockets(application)
        } else {
            Log.write("lifecycle", "unsupervised: no voipd, never suspended; registrations refreshed on the softphone's own timer")
        }
        try sip.start(restoring: restored)
        status.contact = sip.callee?.configuration.contact ?? ""
        reportStatus()
        presence?.connect()
    }

    // The SIP sockets voipd held for an earlier run of this app, by the role their name says.
    private func takeRestoredSockets(_ application: VoIPApplication) -> [(SIPSocketRole, Int32)] {
        application.restoredSocketNames.compactMap { name in
            guard let descriptor = application.takeRestoredSocket(named: name) else { return nil }
            // One whose kind cannot be read counts as no datagram socket, as before.
            let isDatagram = (try? Socket.kind(of: descriptor))?.isDatagram == true
            guard let role = SIPSocketRole(voipSocketName: name, isDatagram: isDatagram), options.uses(role) else {
                // Held for a run with other options (or not the softphone's at all): voipd
                // would otherwise go on holding, and waking the phone for, a socket nobody reads.
                Log.write("lifecycle", "voipd handed back a socket named \(name) that this run does not use; closed and released")
                do {
                    try application.unregisterVoIPSocket(name: name)
                } catch {
                    Log.write("lifecycle", "releasing the VoIP socket \(name): \(error)")
                }
                return nil
            }
            status.voipSockets.append(.init(name: name, detail: "handed back by voipd", held: true))
            return (role, descriptor.release())
        }
    }

    // Between acknowledging didEnterBackground and the SIGSTOP of voipd's suspension, this
    // loop keeps running, and this is what it may do then: read any SIP socket that became
    // readable and handle each complete message it read to the end (an INVITE: 100 and 180
    // sent, the call's background task begun); read voipd's events; send on the network but
    // never wait on it, nor on voipd for more than a reply. It may be stopped at any
    // instruction of that. Nothing is lost by a stop: the process resumes where it stopped,
    // with the bytes it read in its framers and its transactions and timers in memory
    // (deadlines on the monotonic clock fall due at once), and finishes what it had begun.
    // That it is resumed at all for a message it read after acknowledging is voipd's
    // promise (issue 10 part 1; docs/LIFECYCLE.md); a message still unread is voipd's to
    // wake it for anyway.

    /// One wait and what it brought.
    private func turn() throws {
        let controlFD = application?.fileDescriptor ?? -1
        let presenceFD = presence?.fileDescriptor ?? -1
        let sipFDs = sip.descriptors
        // poll() skips a negative descriptor.
        var descriptors = ([controlFD, presenceFD] + sipFDs).map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let buffered = application?.hasBufferedMessages ?? false
        let timeout = buffered ? 0 : pollTimeout(until: nextDeadline)
        do throws(Errno) {
            // An interruption is a turn with nothing ready.
            _ = try poll(&descriptors, timeoutMilliseconds: timeout)
        } catch {
            throw NetworkError(error)
        }
        for (fd, descriptor) in zip(sipFDs, descriptors.dropFirst(2)) where descriptor.revents != 0 {
            sip.readAvailable(fd)
        }
        if descriptors[1].revents != 0 { presence?.readAvailable() }
        fireDueTimers()
        if descriptors[0].revents != 0 || buffered { try handleEvents() }
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
        guard let application else { return }
        while let event = try application.nextEvent(timeoutMilliseconds: 0) {
            var detail = ""
            if let socket = event.socket {
                detail = " \(socket.name) (\(socket.bytesAvailable) bytes\(socket.peerClosed ? ", peer closed" : ""))"
                // A wake is acknowledged only after what it announces is read and handled, on
                // every SIP socket (a listener's connection accepted, every datagram read): a
                // call it brings must hold its background task before voipd may suspend the
                // app again, and a connection accepted is held by voipd before then.
                sip.readEverything()
            }
            Log.write("lifecycle", "\(event.kind.rawValue)\(detail), now \(event.state.rawValue): \(event.reason)")
            application.dispatch(event)
            try application.acknowledge(event)
            if application.terminationRequested { return }
        }
    }

    func keepAliveFired() {
        Log.write("lifecycle", "keep-alive: registering again")
        sip.refreshRegistration()
    }

    /// Asks voipd for a keep-alive every `seconds`, telling it how long the registration
    /// keeps the phone reachable without one (`reachableFor`, once a grant is known); says
    /// so loudly if it refuses.
    func setKeepAlive(_ seconds: Int, reachableFor: Int? = nil) {
        guard let application else { return }
        do {
            try application.setKeepAliveTimeout(Double(seconds), reachableFor: reachableFor.map(Double.init)) { [unowned self] in keepAliveFired() }
            keepAliveSeconds = seconds
            keepAliveReachableFor = reachableFor
            Log.write("lifecycle", "keep-alive every \(seconds) s" + (reachableFor.map { ", reachable for \($0) s without one" } ?? ""))
        } catch {
            Log.write("lifecycle", "WARNING: voipd refused a keep-alive every \(seconds) s: \(error)")
            status.registration?.warning = "voipd refused a keep-alive every \(seconds) s: \(error)"
        }
    }

    /// Logs the status line if it changed since the last one.
    func reportStatus() {
        let line = status.json
        guard line != lastStatusLine else { return }
        lastStatusLine = line
        Log.write("status", line)
    }

    private var lastStatusLine = ""
}

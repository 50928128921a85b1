import SIP
import VoipClient

// The lifecycle, under UIKit's names. voipSocketReadable is handled by the event loop
// itself (see handleEvents()), before the event is dispatched.
extension Softphone: VoIPApplicationDelegate {
    func applicationDidEnterBackground(_ application: VoIPApplication) {
        // TN2277: nothing here may wait on the network. The presence protocol's quiescent
        // mode is not polling; the SIP sockets are voipd's to watch from now on.
        presence?.pause()
        Log.write("lifecycle", "quiesced: presence polls paused, the SIP sockets left to voipd")
    }

    func applicationWillEnterForeground(_ application: VoIPApplication) {
        presence?.resume()
    }

    // voipd restarting is not the app's business: it keeps its calls and its SIP
    // sockets, and the client library registers them again.
    func applicationSupervisorDidBecomeUnavailable(_ application: VoIPApplication) {
        Log.write("lifecycle", "voipd went away; running unsupervised until it is back")
    }

    func applicationSupervisorDidBecomeAvailable(_ application: VoIPApplication) {
        let names = application.registeredVoIPSocketNames.joined(separator: ", ")
        Log.write("lifecycle", "voipd is back: connected again (\(application.state.rawValue)); VoIP sockets registered again: \(names.isEmpty ? "none" : names)")
    }

    func application(_ application: VoIPApplication, didFailToRegisterVoIPSocket name: String, error: VoipdError) {
        Log.write("sip", "voipd, back, refused the VoIP socket \(name): \(error)")
        noteVoIPSocket(name, detail: nil, refusal: "\(error)")
    }
}

extension Softphone: SIPLinkDelegate {
    func sipLink(_ link: SIPLink, didOpen role: SIPSocketRole, fd: Int32, detail: String) {
        guard let application else { return }
        let name = role.voipSocketName
        do {
            try application.registerVoIPSocket(fd, name: name)
            Log.write("sip", "handed to voipd as VoIP socket \"\(name)\" (\(detail))")
            noteVoIPSocket(name, detail: detail, refusal: nil)
        } catch {
            // voipd may refuse a kind of socket it cannot hold (a listening or unconnected
            // one): the softphone works on, but while it is suspended nothing arriving on
            // that socket wakes it.
            Log.write("sip", "WARNING: voipd refused the VoIP socket \"\(name)\" (\(detail)): \(error); while suspended, nothing arriving on it wakes this phone")
            noteVoIPSocket(name, detail: detail, refusal: "\(error)")
        }
    }

    func sipLink(_ link: SIPLink, didClose role: SIPSocketRole, reason: String) {
        let name = role.voipSocketName
        let wasHeld = status.voipSockets.first { $0.name == name }?.held ?? false
        status.voipSockets.removeAll { $0.name == name }
        reportStatus()
        guard let application else { return }
        if wasHeld {
            // voipd's duplicate would keep the dead connection open, and the name taken.
            do {
                try application.unregisterVoIPSocket(name: name)
            } catch {
                Log.write("sip", "releasing the VoIP socket \(name): \(error)")
            }
        }
        // The reconnection and its REGISTER must not be cut short by a suspension.
        if role == .registrarConnection { work.begin(.registration) }
    }

    func sipLinkDidSendRegister(_ link: SIPLink) {
        work.begin(.registration)
    }

    func sipLink(_ link: SIPLink, didReport event: SIPCallee.Event) {
        switch event {
        case .registered(let expires):
            followGrant(expires)
            work.end(.registration)
        case .registrationFailed:
            work.end(.registration)
        case .unregistered:
            break
        case .incomingCall:
            // Ringing is work under a task; an answered call holds the audio session.
            work.begin(.call)
        case .callEstablished:
            if let after = options.hangUpAfter { timers.arm(.hangUp, after: after) }
            work.setInCall(true)
            // Refused (a manifest without calls), the task keeps what time it has.
            if work.inCall { work.end(.call) }
        case .callEnded:
            timers.cancel(.hangUp)
            work.end(.call)
            work.setInCall(false)
        }
    }

    private func noteVoIPSocket(_ name: String, detail: String?, refusal: String?) {
        let previous = status.voipSockets.first { $0.name == name }
        status.voipSockets.removeAll { $0.name == name }
        status.voipSockets.append(.init(name: name, detail: detail ?? previous?.detail ?? "", held: refusal == nil, refusal: refusal))
        status.voipSockets.sort { $0.name < $1.name }
        reportStatus()
    }

    /// The registrar granted `expires` seconds: keep the keep-alive short enough that a
    /// suspended phone registers again before the grant runs out, and say so loudly when
    /// the grant is shorter than the keep-alive, and louder when even the shortest
    /// keep-alive voipd permits cannot cover it.
    private func followGrant(_ expires: Int) {
        guard let callee = sip.callee else { return }
        guard let schedule = callee.registrationSchedule else {
            // Unsupervised: the softphone's own timer refreshes.
            status.registration = .init(
                requestedExpires: callee.configuration.expires, grantedExpires: expires,
                refreshSeconds: Int(SIPCallee.refreshDelay(forGrantedExpiry: expires).components.seconds), keepAliveSeconds: nil,
                keepAliveLowered: false, lapseSeconds: 0)
            return reportStatus()
        }
        let previous = status.registration
        let minimum = keepAliveMinimum ?? 600
        // The schedule is in real seconds (the grant's); voipd is told the app's.
        let policy = options.wakePolicy(keepAliveMinimum: minimum, time)
        let requested = SIPRegistrationSchedule.requestedExpiry(configured: options.expires, policy: policy)
        let wake = time.appSeconds(schedule.wakeInterval)
        let reachableFor = time.appSeconds(schedule.reachableFor)
        var warning: String?
        if !schedule.coversGrant {
            warning = "the registrar grants \(expires) s, but the shortest keep-alive voipd permits this app is \(minimum) s: while suspended, this phone may be unregistered, and miss calls, for up to \(schedule.lapse) s before each keep-alive; lower the keep-alive minimum for this app (\"keepAliveMinimum\": \(reachableFor) in its manifest) or make the registrar grant at least \(SIPRegistrationSchedule.shortestCoveredGrant(policy: policy)) s\(time.note)"
        }
        if previous?.grantedExpires != expires || previous?.keepAliveSeconds != wake {
            if let warning {
                Log.write("registration", "WARNING: \(warning)")
            } else if schedule.isWakeIntervalLowered {
                Log.write("registration", "WARNING: the registrar grants \(expires) s, less than the keep-alive of \(options.keepAlive) s needs: keep-alive lowered to \(wake) s, so that a suspended phone registers again in time\(time.note)")
            } else {
                Log.write("registration", "granted \(expires) s: keep-alive every \(wake) s, refresh after \(schedule.refreshDelay) s while running\(time.note)")
            }
        }
        if keepAliveSeconds != wake || keepAliveReachableFor != reachableFor {
            setKeepAlive(wake, reachableFor: reachableFor)
        }
        status.registration = .init(
            requestedExpires: requested, grantedExpires: expires, refreshSeconds: schedule.refreshDelay, keepAliveSeconds: keepAliveSeconds,
            keepAliveLowered: schedule.isWakeIntervalLowered, lapseSeconds: schedule.lapse,
            warning: keepAliveSeconds == wake ? warning : "voipd refused a keep-alive every \(wake) s")
        reportStatus()
    }
}

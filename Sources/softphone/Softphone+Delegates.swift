import SIP
import VoipClient

// The lifecycle, under UIKit's names. voipSocketReadable is handled by the event loop
// itself (see handleEvents()), before the event is dispatched.
extension Softphone: VoIPApplicationDelegate {
    func applicationDidEnterBackground(_ application: VoIPApplication) {
        // TN2277: nothing here may wait on the network. The presence protocol's quiescent
        // mode is not polling; the SIP connection is voipd's to watch from now on.
        presence?.pause()
        Log.write("lifecycle", "quiesced: presence polls paused, the SIP connection left to voipd")
    }

    func applicationWillEnterForeground(_ application: VoIPApplication) {
        presence?.resume()
    }

    // voipd restarting is not the app's business: it keeps its calls and its SIP
    // connection, and the client library registers the connection again.
    func applicationSupervisorDidBecomeUnavailable(_ application: VoIPApplication) {
        Log.write("lifecycle", "voipd went away; running unsupervised until it is back")
    }

    func applicationSupervisorDidBecomeAvailable(_ application: VoIPApplication) {
        let names = application.registeredVoIPSocketNames.joined(separator: ", ")
        Log.write("lifecycle", "voipd is back: connected again (\(application.state.rawValue)); VoIP sockets registered again: \(names.isEmpty ? "none" : names)")
    }

    func application(_ application: VoIPApplication, didFailToRegisterVoIPSocket name: String, error: VoipdError) {
        Log.write("sip", "voipd, back, refused the VoIP socket \(name): \(error)")
    }
}

extension Softphone: SIPLinkDelegate {
    func sipLink(_ link: SIPLink, didOpen connection: TCPConnection) {
        do {
            try application.registerVoIPSocket(connection.fd, name: Self.sipSocketName)
            Log.write("sip", "handed to voipd as VoIP socket \"\(Self.sipSocketName)\"")
        } catch {
            Log.write("sip", "voipd refused the VoIP socket: \(error)")
        }
    }

    func sipLink(_ link: SIPLink, didLose connection: TCPConnection, reason: String) {
        // voipd's duplicate would keep the dead connection open, and the name taken.
        do {
            try application.unregisterVoIPSocket(name: Self.sipSocketName)
        } catch {
            Log.write("sip", "releasing the VoIP socket: \(error)")
        }
        // The reconnection and its REGISTER must not be cut short by a suspension.
        work.begin(.registration)
    }

    func sipLinkDidSendRegister(_ link: SIPLink) {
        work.begin(.registration)
    }

    func sipLink(_ link: SIPLink, didReport event: SIPCallee.Event) {
        switch event {
        case .registered, .registrationFailed:
            work.end(.registration)
        case .unregistered:
            break
        case .incomingCall:
            work.begin(.call)
        case .callEstablished:
            if let after = options.hangUpAfter { timers.arm(.hangUp, after: after) }
        case .callEnded:
            timers.cancel(.hangUp)
            work.end(.call)
        }
    }
}

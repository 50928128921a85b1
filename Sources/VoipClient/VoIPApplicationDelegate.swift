import VoipdVocabulary

/// What an app is told, under UIKit's names. Every method has a default that does nothing;
/// returning from a method acknowledges the event, as returning from UIKit's does.
public protocol VoIPApplicationDelegate: AnyObject {
    func applicationWillResignActive(_ application: VoIPApplication)
    /// About 5 s to finish here, or the watchdog kills the app. Begin a background task
    /// for longer work.
    func applicationDidEnterBackground(_ application: VoIPApplication)
    func applicationWillEnterForeground(_ application: VoIPApplication)
    func applicationDidBecomeActive(_ application: VoIPApplication)
    /// The app is about to be ended; it is killed once this returns.
    func applicationWillTerminate(_ application: VoIPApplication)
    /// Data (or a hang-up) arrived on a VoIP socket while the app was suspended. The app
    /// reads the socket itself; voipd never consumes its data.
    func application(_ application: VoIPApplication, voipSocketReadable readiness: SocketReadiness)
    /// voipd went away (it crashed or is restarting): the app runs unsupervised, and the
    /// application tries to reconnect (``VoIPApplication/reconnection``). Nothing suspends
    /// the app meanwhile, and no event comes.
    func applicationSupervisorDidBecomeUnavailable(_ application: VoIPApplication)
    /// voipd is back, and the app is supervised again: it has said hello, its VoIP sockets
    /// are registered again (those refused were reported first), its keep-alive is set and
    /// its open background tasks begun again. ``VoIPApplication/status`` says how voipd sees it now.
    func applicationSupervisorDidBecomeAvailable(_ application: VoIPApplication)
    /// voipd, back after a restart, refused to hold a socket the app had registered (a
    /// lowered quota, say): the socket is no longer a VoIP socket.
    func application(_ application: VoIPApplication, didFailToRegisterVoIPSocket name: String, error: VoipdError)
    /// Events of the background session `identifier`, which this process has not opened
    /// (it was relaunched for them): open it here with
    /// ``VoIPApplication/backgroundSession(identifier:options:delegate:)`` so its delegate
    /// receives them (`application(_:handleEventsForBackgroundURLSession:completionHandler:)`;
    /// the delivery is acknowledged once its events are handed over).
    func application(_ application: VoIPApplication, handleEventsForBackgroundSession identifier: String)
}

extension VoIPApplicationDelegate {
    public func applicationWillResignActive(_ application: VoIPApplication) {}
    public func applicationDidEnterBackground(_ application: VoIPApplication) {}
    public func applicationWillEnterForeground(_ application: VoIPApplication) {}
    public func applicationDidBecomeActive(_ application: VoIPApplication) {}
    public func applicationWillTerminate(_ application: VoIPApplication) {}
    public func application(_ application: VoIPApplication, voipSocketReadable readiness: SocketReadiness) {}
    public func applicationSupervisorDidBecomeUnavailable(_ application: VoIPApplication) {}
    public func applicationSupervisorDidBecomeAvailable(_ application: VoIPApplication) {}
    public func application(_ application: VoIPApplication, didFailToRegisterVoIPSocket name: String, error: VoipdError) {}
    public func application(_ application: VoIPApplication, handleEventsForBackgroundSession identifier: String) {}
}

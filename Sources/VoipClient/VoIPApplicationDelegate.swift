import VoipdLifecycle

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
}

extension VoIPApplicationDelegate {
    public func applicationWillResignActive(_ application: VoIPApplication) {}
    public func applicationDidEnterBackground(_ application: VoIPApplication) {}
    public func applicationWillEnterForeground(_ application: VoIPApplication) {}
    public func applicationDidBecomeActive(_ application: VoIPApplication) {}
    public func applicationWillTerminate(_ application: VoIPApplication) {}
    public func application(_ application: VoIPApplication, voipSocketReadable readiness: SocketReadiness) {}
}

import VoipdLifecycle

/// Hibernation (seed 004): paging a suspended app's memory out.
extension Daemon {
    /// The lifecycle decided to hibernate `app`.
    func hibernate(_ app: AppRecord, reason: String) {
        // The page-out itself comes with the daemon's part of issue 13.
        log.debug("\(app.name): \(reason): hibernation is not performed yet")
    }
}

/// Why an app's process ended. Recorded when the supervisor decides to end it (or when it
/// ends on its own) and shown by `voipctl status` and the event stream.
public struct TerminationReason: Equatable, Sendable, Codable, CustomStringConvertible {
    /// A stable identifier scripts can match on.
    public enum Code: String, Codable, Sendable, CaseIterable {
        /// The process exited by itself.
        case exited
        /// The process died of a signal the supervisor did not send: a crash.
        case crashed
        /// An event was not acknowledged in time (iOS's 0x8badf00d).
        case watchdog
        /// Background tasks were still open when the budget ran out.
        case backgroundTaskExpired
        /// `voipctl kill`: SIGKILL with no willTerminate, like a force quit.
        case forceQuit
        /// `voipctl terminate`.
        case terminated
        /// The app opted out of suspension (exits-on-suspend).
        case exitsOnSuspend
        /// voipd could not suspend it (the signal or the freezer failed, or the stop never
        /// landed), so ended it instead; or could not resume it, so killed it.
        case suspendFailed
        /// Killed to free memory (jetsam).
        case memoryPressure
        /// The process could not be started.
        case launchFailed
        /// The daemon shut down and was told to end its apps.
        case shutdown
    }

    public var code: Code
    /// The details in words: which event, which limit, which signal.
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? code.rawValue : "\(code.rawValue): \(detail)" }
}

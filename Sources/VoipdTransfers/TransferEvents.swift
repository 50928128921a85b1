import FoundationEssentials

/// What an app learns about its tasks.
public struct TransferEvent: Codable, Hashable, Sendable {
    public enum Kind: Codable, Hashable, Sendable {
        /// Bytes moved (only to an app that is running; never a reason to resume it).
        case progress(TransferProgress)
        /// The task is stopped on a 401 until the app answers (`answerChallenge`).
        case challenge(AuthenticationChallenge)
        /// The task ended: the response and the error, if any.
        case completed(TransferCompletion)
    }

    public var task: TransferTaskID
    /// The session's identifier within the app.
    public var session: String
    public var kind: Kind

    public init(task: TransferTaskID, session: String, kind: Kind) {
        self.task = task
        self.session = session
        self.kind = kind
    }
}

/// How the app must be made to run to receive a delivery.
public enum TransferWake: String, Codable, Hashable, Sendable {
    /// It is running: just send the events.
    case none
    /// It is suspended: resume it in the background, then send them.
    case resume
    /// It is not running: launch it in the background (`handleEventsForBackgroundURLSession`),
    /// and send them once it has connected.
    case relaunch
}

/// Events handed to an app together. The app says when it has handled them
/// (``TransferInput/eventsHandled(app:_:)``); until then they are delivered again if the app
/// ends first.
public struct TransferDelivery: Codable, Hashable, Sendable {
    public var id: DeliveryID
    public var app: String
    public var events: [TransferEvent]
    public var wake: TransferWake
}

/// An app's state as the transfer engine needs it (voipd's lifecycle reports it).
public enum AppPresence: String, Codable, Hashable, Sendable {
    /// Active or inactive.
    case foreground
    /// Running in the background.
    case background
    case suspended
    /// Terminated or never started.
    case notRunning

    public var isRunning: Bool { self == .foreground || self == .background }
}

/// Why a waiting task is not running.
public enum TransferWaitReason: Codable, Hashable, Sendable {
    /// A retry's back-off, or the work period of a task created during a wake for events.
    case notBefore(Date)
    case noNetwork
    /// The network is expensive and the task may not use it, or the task is discretionary.
    case expensiveNetwork
    /// Discretionary, and the device is on battery.
    case onBattery
    /// Discretionary, and the network kind's daily budget is spent until then.
    case budgetSpent(until: Date)
    /// Ready, waiting for a free slot (per-host and overall limits, by priority).
    case queued
}

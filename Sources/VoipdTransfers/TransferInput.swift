/// Everything that can happen to the transfer service: requests of apps, the apps'
/// lifecycle, the device's conditions, the agents' reports, and time passing.
public enum TransferInput: Hashable, Sendable {
    /// Opens a session, or changes the options of one (`nil`: the configured defaults).
    case openSession(TransferSessionID, TransferOptions?)
    case createTask(TransferSessionID, TransferTaskSpec)
    case cancelTask(TransferSessionID, TransferTaskID)
    case setPriority(TransferSessionID, TransferTaskID, Double)
    case answerChallenge(TransferSessionID, TransferTaskID, ChallengeAnswer)
    /// `finishTasksAndInvalidate` (false) or `invalidateAndCancel` (true): no new tasks; the
    /// session is gone once its tasks have ended and been handed over.
    case invalidateSession(TransferSessionID, cancelTasks: Bool)
    /// The app has handled a delivery (the completion handler of
    /// `handleEventsForBackgroundURLSession`).
    case eventsHandled(app: String, DeliveryID)
    /// A delivery could not be made (the app could not be resumed or relaunched): its events
    /// wait until the app runs again.
    case deliveryFailed(app: String, DeliveryID)
    case appPresence(app: String, AppPresence)
    case power(PowerSource)
    case network(NetworkStatus)
    case attempt(AttemptReport)
    /// Time passed (the timer armed for ``TransferEngine/nextDeadline`` fired).
    case tick
}

/// The answer to a request.
public enum TransferReply: Hashable, Sendable {
    case done
    case taskCreated(TransferTaskID)
    case rejected(TransferRequestError)
}

/// What the service must do. The engine never performs system calls itself.
public enum TransferAction: Hashable, Sendable {
    /// Start an attempt in the app's agent (which runs as the app's user).
    case start(app: String, AttemptOrder)
    case stop(app: String, task: TransferTaskID, attempt: Int, keepPartial: Bool)
    case discardPartial(app: String, task: TransferTaskID, path: String)
    /// Hand events to the app, resuming or relaunching it first as `wake` says.
    case deliver(TransferDelivery)
    /// Progress of a task of a running app.
    case progress(app: String, TransferEvent)
    /// Write the task's record (atomically).
    case saveTask(TransferTask)
    /// Remove the task's record.
    case forgetTask(TransferTaskID)
    /// Write ``TransferEngine/durableState``.
    case saveState
}

/// The result of one input: the reply to a request, and the actions, in order.
public struct TransferStep: Hashable, Sendable {
    public var reply: TransferReply?
    public var actions: [TransferAction]

    public init(reply: TransferReply?, actions: [TransferAction]) {
        self.reply = reply
        self.actions = actions
    }
}

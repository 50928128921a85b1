/// What voipd asks the transfer agent (`voipd-transfer`) to do: one attempt of one task.
public struct AttemptOrder: Codable, Hashable, Sendable {
    public var task: TransferTaskID
    /// Reports about the attempt carry this number; those of an attempt that is no longer
    /// the task's current one are ignored.
    public var attempt: Int
    public var kind: TransferKind
    /// Downloads: the partial file, renamed to the destination when complete.
    public var partialPath: String?
    /// The request as sent: the app's headers, with the credential of a challenge answer.
    public var request: TransferRequest
    /// Downloads: resume the partial file with a Range request validated by this, if the
    /// file has bytes; nil to start it again.
    public var resumeFrom: ResumeValidator?
    public var timeoutIntervalForRequest: Double
    public var progressInterval: Double

    public init(task: TransferTaskID, attempt: Int, kind: TransferKind, partialPath: String?, request: TransferRequest,
                resumeFrom: ResumeValidator?, timeoutIntervalForRequest: Double, progressInterval: Double) {
        self.task = task
        self.attempt = attempt
        self.kind = kind
        self.partialPath = partialPath
        self.request = request
        self.resumeFrom = resumeFrom
        self.timeoutIntervalForRequest = timeoutIntervalForRequest
        self.progressInterval = progressInterval
    }
}

/// A message from voipd to the agent.
public enum AgentCommand: Codable, Hashable, Sendable {
    case start(AttemptOrder)
    /// End an attempt. `keepPartial`: a download's partial file stays for a later Range
    /// resumption; otherwise it is removed.
    case stop(task: TransferTaskID, attempt: Int, keepPartial: Bool)
    /// Remove a partial file left by an attempt that ended earlier (the task has ended).
    case discardPartial(task: TransferTaskID, path: String)
}

/// How an attempt ended, as the agent saw it.
public enum AttemptOutcome: Codable, Hashable, Sendable {
    /// A 2xx response; a download's file is in place.
    case completed(HTTPResponseHead)
    /// A final response that is not 2xx (nor a challenge); its body was discarded.
    case httpError(HTTPResponseHead)
    /// A 401 with `WWW-Authenticate`; a download's partial file is kept.
    case challenged(HTTPResponseHead)
    case networkFailure(NetworkFailure)
    /// The file could not be opened, read or written as the agent's user.
    case fileFailure(String)
    /// Stopped on voipd's order.
    case stopped
}

/// Something the agent says about an attempt.
public struct AttemptReport: Codable, Hashable, Sendable {
    public enum Event: Codable, Hashable, Sendable {
        /// The final response's head arrived (after redirects); `resumedFrom` bytes of the
        /// file were kept (a 206 continuing the partial file), 0 otherwise.
        case response(HTTPResponseHead, resumedFrom: Int64)
        case progress(TransferProgress)
        case ended(AttemptOutcome, TransferProgress)
    }

    public var task: TransferTaskID
    public var attempt: Int
    public var event: Event

    public init(task: TransferTaskID, attempt: Int, event: Event) {
        self.task = task
        self.attempt = attempt
        self.event = event
    }
}

/// A message from the agent to voipd.
public enum AgentReport: Codable, Hashable, Sendable {
    /// The first message: who the agent is running as.
    case ready(pid: Int32, uid: UInt32, version: Int)
    case attempt(AttemptReport)
}

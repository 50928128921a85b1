import FoundationEssentials

/// Whether an event about a task (its completion or a challenge) has reached the app.
public enum DeliveryState: Codable, Hashable, Sendable {
    /// Waiting to be delivered, since then (the coalescing window counts from the earliest).
    case pending(since: Date)
    /// In this delivery, which the app has not said it handled.
    case sent(DeliveryID)
    /// The app handled it (a challenge then waits for the answer).
    case handled
}

/// The attempt in progress: its number, and what the engine counts of it.
public struct RunningAttempt: Codable, Hashable, Sendable {
    public var number: Int
    public var startedAt: Date
    /// The attempt was told to stop so the task can wait (conditions turned bad); it goes
    /// back to waiting when the agent reports its end.
    public var pausing: Bool = false
    /// Bytes of the file the attempt did not have to fetch (a Range resumption).
    public var resumedFrom: Int64 = 0
    /// Bytes counted against the budget so far.
    public var countedBytes: Int64 = 0
    /// The network the bytes are counted on.
    public var network: NetworkKind
}

/// Where a task is in its life.
public enum TransferPhase: Codable, Hashable, Sendable {
    /// Queued, not before the date if one is given (a retry's back-off, or the work period
    /// of a task created while the app was resumed for events, under
    /// ``ResumeLimiterPlacement/delayNewTasks``).
    case waiting(notBefore: Date?)
    case running(RunningAttempt)
    /// Stopped on a 401 until the app answers.
    case challenged(AuthenticationChallenge, DeliveryState)
    /// Ended; removed once the app has handled its completion.
    case finished(TransferCompletion, DeliveryState)
}

/// One background task: what the app asked, and where it stands. This is the record the
/// store keeps (apart from a challenge's credential, which lives in memory only).
public struct TransferTask: Codable, Hashable, Sendable {
    public let id: TransferTaskID
    public let session: TransferSessionID
    public let kind: TransferKind
    public let request: TransferRequest
    public var priority: Double
    public let options: TransferOptions
    public let createdAt: Date
    /// Created while the app was not in the foreground: discretionary until the app comes to
    /// the foreground (seed 003: "the system infers that a task started when the app is in
    /// the background is discretionary"; "on iOS 8, the inference that a
    /// started-in-the-background task is discretionary is dropped when the app moves to the
    /// front").
    public var discretionaryInferred: Bool
    public var phase: TransferPhase
    public var progress = TransferProgress()
    public var attemptsStarted = 0
    public var failuresInARow = 0
    /// Challenges answered with a credential the server refused.
    public var challengeFailures = 0
    /// What a Range request can resume from (downloads, from the last response).
    public var resumeValidator: ResumeValidator?
    /// Why the last attempt failed, while the task waits to try again.
    public var lastFailure: String?
    /// The app's answer to a challenge, used by the attempts after it. Never stored.
    public var credential: TransferCredential?

    enum CodingKeys: String, CodingKey {
        case id, session, kind, request, priority, options, createdAt, discretionaryInferred, phase, progress
        case attemptsStarted, failuresInARow, challengeFailures, resumeValidator, lastFailure
    }

    public init(id: TransferTaskID, session: TransferSessionID, spec: TransferTaskSpec, options: TransferOptions,
                createdAt: Date, discretionaryInferred: Bool, notBefore: Date?) {
        self.id = id
        self.session = session
        kind = spec.kind
        request = spec.request
        priority = spec.priority
        self.options = options
        self.createdAt = createdAt
        self.discretionaryInferred = discretionaryInferred
        phase = .waiting(notBefore: notBefore)
    }

    /// Discretionary by its options or by inference.
    public var isDiscretionary: Bool { options.discretionary || discretionaryInferred }

    /// When `timeoutIntervalForResource` runs out.
    public var deadline: Date { createdAt.addingTimeInterval(options.timeoutIntervalForResource) }

    public var host: String { request.host }

    public var isFinished: Bool { if case .finished = phase { return true } else { return false } }

    public var runningAttempt: RunningAttempt? { if case .running(let attempt) = phase { return attempt } else { return nil } }

    /// The partial file of a download: hidden, beside the destination (so the rename into
    /// place is atomic), named after the task.
    public var partialPath: String? {
        guard case .download(let destination) = kind else { return nil }
        return Self.partialPath(destination: destination, task: id)
    }

    public static func partialPath(destination: String, task: TransferTaskID) -> String {
        let slash = destination.lastIndex(of: "/")!
        let directory = destination[..<slash]
        let name = destination[destination.index(after: slash)...]
        return "\(directory)/.\(name).\(task.rawValue).voipd-partial"
    }

    /// The event waiting for the app, if any, and its delivery state.
    public var deliveryState: DeliveryState? {
        switch phase {
        case .challenged(_, let state), .finished(_, let state): return state
        case .waiting, .running: return nil
        }
    }
}

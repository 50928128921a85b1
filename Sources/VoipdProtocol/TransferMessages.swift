import VoipdTransfers

// Background transfers on the control socket (docs/TRANSFERS.md, docs/PROTOCOL.md): an app
// opens background sessions and creates download and upload tasks; voipd performs them
// while the app is suspended or not running, and hands the results over in a
// `backgroundTransferEvents` event.

/// What `transferSession` (type 10) does to a session.
public enum TransferSessionVerb: String, Codable, Sendable, CaseIterable {
    /// Opens it (or changes its options); the reply lists its tasks (URLSession's
    /// `getAllTasks`, for an app relaunched to find its tasks).
    case open
    /// `finishTasksAndInvalidate`: no new tasks; it goes once its tasks have ended.
    case finishAndInvalidate
    /// `invalidateAndCancel`: its tasks are cancelled.
    case invalidateAndCancel
}

/// `transferSession` (type 10).
public struct TransferSessionRequest: Codable, Sendable {
    public var id: UInt64
    public var verb: TransferSessionVerb
    /// The session's identifier within the app (`background(withIdentifier:)`).
    public var session: String
    /// For `open`: the session's configuration (absent: voipd's defaults).
    public var options: TransferOptions?

    public init(id: UInt64, verb: TransferSessionVerb, session: String, options: TransferOptions? = nil) {
        self.id = id
        self.verb = verb
        self.session = session
        self.options = options
    }
}

/// The reply to `transferSession`: the session's tasks (`open`), else none.
public struct TransferTasksResult: Codable, Sendable {
    public var tasks: [TransferTaskStatus]
    public init(tasks: [TransferTaskStatus]) { self.tasks = tasks }
}

/// Whether a task downloads or uploads.
public enum TransferTaskKind: String, Codable, Sendable, CaseIterable {
    case download, upload
}

/// `transferCreate` (type 11): a download of `url` into the file `path`, or an upload of the
/// file `path` to `url` (from a file only, as in iOS). Options left out come from the session.
public struct TransferCreateRequest: Codable, Sendable {
    public var id: UInt64
    public var session: String
    public var kind: TransferTaskKind
    public var url: String
    /// GET for downloads, PUT for uploads when absent.
    public var method: String?
    public var headers: HTTPHeaders?
    /// An absolute path: the destination of a download, the source of an upload.
    public var path: String
    /// 0…1, higher first; 0.5 when absent.
    public var priority: Double?
    public var discretionary: Bool?
    public var allowsExpensiveNetworkAccess: Bool?
    public var timeoutIntervalForResource: Double?
    public var timeoutIntervalForRequest: Double?

    public init(id: UInt64, session: String, kind: TransferTaskKind, url: String, method: String? = nil, headers: HTTPHeaders? = nil,
                path: String, priority: Double? = nil, discretionary: Bool? = nil, allowsExpensiveNetworkAccess: Bool? = nil,
                timeoutIntervalForResource: Double? = nil, timeoutIntervalForRequest: Double? = nil) {
        self.id = id
        self.session = session
        self.kind = kind
        self.url = url
        self.method = method
        self.headers = headers
        self.path = path
        self.priority = priority
        self.discretionary = discretionary
        self.allowsExpensiveNetworkAccess = allowsExpensiveNetworkAccess
        self.timeoutIntervalForResource = timeoutIntervalForResource
        self.timeoutIntervalForRequest = timeoutIntervalForRequest
    }

    /// The task as the engine takes it.
    public var spec: TransferTaskSpec {
        let transferKind: TransferKind = kind == .download ? .download(destination: path) : .upload(source: path)
        let request = TransferRequest(url: url, method: method ?? (kind == .download ? "GET" : "PUT"), headers: headers ?? HTTPHeaders())
        return TransferTaskSpec(kind: transferKind, request: request, priority: priority ?? TransferTaskSpec.defaultPriority,
                                discretionary: discretionary, allowsExpensiveNetworkAccess: allowsExpensiveNetworkAccess,
                                timeoutIntervalForResource: timeoutIntervalForResource, timeoutIntervalForRequest: timeoutIntervalForRequest)
    }
}

/// The reply to `transferCreate`: the task's number, unique and never reused.
public struct TransferCreateResult: Codable, Sendable {
    public var task: UInt64
    public init(task: UInt64) { self.task = task }
}

/// What `transferTask` (type 12) does to a task.
public enum TransferTaskVerb: String, Codable, Sendable, CaseIterable {
    case cancel
    /// To `priority`.
    case setPriority
    /// Answers a challenge with `answer`.
    case answerChallenge
}

/// An answer to an authentication challenge (`URLSession.AuthChallengeDisposition`).
public struct ChallengeAnswerMessage: Codable, Sendable, Equatable {
    public enum Disposition: String, Codable, Sendable, CaseIterable {
        /// Try again with `user` and `password` (HTTP Basic).
        case useCredential
        /// Cancel the task.
        case cancel
        /// Take the 401 as the answer: the task completes with it.
        case performDefaultHandling
    }

    public var disposition: Disposition
    public var user: String?
    public var password: String?

    public init(disposition: Disposition, user: String? = nil, password: String? = nil) {
        self.disposition = disposition
        self.user = user
        self.password = password
    }

    public init(_ answer: ChallengeAnswer) {
        switch answer {
        case .useCredential(let user, let password): self.init(disposition: .useCredential, user: user, password: password)
        case .cancel: self.init(disposition: .cancel)
        case .performDefaultHandling: self.init(disposition: .performDefaultHandling)
        }
    }

    /// The engine's answer; nil when a credential lacks its user or password.
    public var answer: ChallengeAnswer? {
        switch disposition {
        case .useCredential:
            guard let user, let password else { return nil }
            return .useCredential(user: user, password: password)
        case .cancel: return .cancel
        case .performDefaultHandling: return .performDefaultHandling
        }
    }
}

/// `transferTask` (type 12).
public struct TransferTaskRequest: Codable, Sendable {
    public var id: UInt64
    public var session: String
    public var task: UInt64
    public var verb: TransferTaskVerb
    public var priority: Double?
    public var answer: ChallengeAnswerMessage?

    public init(id: UInt64, session: String, task: UInt64, verb: TransferTaskVerb, priority: Double? = nil, answer: ChallengeAnswerMessage? = nil) {
        self.id = id
        self.session = session
        self.task = task
        self.verb = verb
        self.priority = priority
        self.answer = answer
    }
}

/// One event about a task, as an app receives it: a completion or a challenge (in a
/// `backgroundTransferEvents` event), or progress (in a `transferProgress` frame).
public struct TransferEventMessage: Codable, Sendable, Equatable {
    public var task: UInt64
    public var session: String
    /// The task ended: with `error` nil, it succeeded.
    public var completion: TransferCompletion?
    /// The task is stopped on a 401 until the app answers (`transferTask` `answerChallenge`).
    public var challenge: AuthenticationChallenge?
    public var progress: TransferProgress?

    public init(task: UInt64, session: String, completion: TransferCompletion? = nil, challenge: AuthenticationChallenge? = nil,
                progress: TransferProgress? = nil) {
        self.task = task
        self.session = session
        self.completion = completion
        self.challenge = challenge
        self.progress = progress
    }

    public init(_ event: TransferEvent) {
        self.init(task: event.task.rawValue, session: event.session)
        switch event.kind {
        case .completed(let completion): self.completion = completion
        case .challenge(let challenge): self.challenge = challenge
        case .progress(let progress): self.progress = progress
        }
    }
}

/// What a `backgroundTransferEvents` event carries: the events of one delivery, for every
/// session of the app. Acknowledging the event says they are handled (the completion
/// handler of `handleEventsForBackgroundURLSession`).
public struct TransferEventsPayload: Codable, Sendable, Equatable {
    public var delivery: UInt64
    public var events: [TransferEventMessage]
    public init(delivery: UInt64, events: [TransferEventMessage]) {
        self.delivery = delivery
        self.events = events
    }
}

/// Where a task stands, as `transferSession` `open` and `transfers` report it. Field names
/// are stable; scripts rely on them.
public struct TransferTaskStatus: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable {
        case waiting, running, challenged, completed
    }

    public var task: UInt64
    public var app: String
    public var session: String
    public var kind: TransferTaskKind
    public var url: String
    public var method: String
    public var path: String
    public var priority: Double
    /// Discretionary by its options or by inference.
    public var discretionary: Bool
    /// Discretionary because it was created while the app was in the background.
    public var discretionaryInferred: Bool
    public var state: State
    /// Why a waiting task waits: `notBefore`, `noNetwork`, `expensiveNetwork`, `onBattery`,
    /// `budgetSpent`, `queued`.
    public var waitReason: String?
    /// Until when it waits (`notBefore`, `budgetSpent`), seconds since the epoch.
    public var waitUntil: Double?
    public var bytesSent: Int64
    public var bytesExpectedToSend: Int64?
    public var bytesReceived: Int64
    public var bytesExpectedToReceive: Int64?
    public var attempts: Int
    public var lastFailure: String?
    /// A completed task's HTTP status and error, if any.
    public var httpStatus: Int?
    public var error: String?
    /// Seconds since the epoch.
    public var createdAt: Double
    /// When `timeoutIntervalForResource` runs out, seconds since the epoch.
    public var deadline: Double
    /// A running attempt's bytes moved per second, on average since it started.
    public var bytesPerSecond: Double?

    public init(task: UInt64, app: String, session: String, kind: TransferTaskKind, url: String, method: String, path: String,
                priority: Double, discretionary: Bool, discretionaryInferred: Bool, state: State, waitReason: String? = nil,
                waitUntil: Double? = nil, bytesSent: Int64, bytesExpectedToSend: Int64?, bytesReceived: Int64,
                bytesExpectedToReceive: Int64?, attempts: Int, lastFailure: String?, httpStatus: Int? = nil, error: String? = nil,
                createdAt: Double, deadline: Double, bytesPerSecond: Double? = nil) {
        self.task = task
        self.app = app
        self.session = session
        self.kind = kind
        self.url = url
        self.method = method
        self.path = path
        self.priority = priority
        self.discretionary = discretionary
        self.discretionaryInferred = discretionaryInferred
        self.state = state
        self.waitReason = waitReason
        self.waitUntil = waitUntil
        self.bytesSent = bytesSent
        self.bytesExpectedToSend = bytesExpectedToSend
        self.bytesReceived = bytesReceived
        self.bytesExpectedToReceive = bytesExpectedToReceive
        self.attempts = attempts
        self.lastFailure = lastFailure
        self.httpStatus = httpStatus
        self.error = error
        self.createdAt = createdAt
        self.deadline = deadline
        self.bytesPerSecond = bytesPerSecond
    }
}

/// `transfers` (type 24): every app's tasks, or one app's.
public struct TransfersRequest: Codable, Sendable {
    public var id: UInt64
    public var app: String?
    public init(id: UInt64, app: String? = nil) {
        self.id = id
        self.app = app
    }
}

extension TransferTasksResult: ListResult {
    public var items: [TransferTaskStatus] {
        get { tasks }
        set { tasks = newValue }
    }
    public init(items: [TransferTaskStatus]) { self.init(tasks: items) }
}

/// `systemCommand` `power`: where the power comes from, overriding what
/// `/sys/class/power_supply` says, or `auto` to go back to it.
public enum PowerSetting: String, Codable, Sendable, CaseIterable {
    case externalPower, battery, auto
}

/// `systemCommand` `network`: the network as background transfers see it. Each field given
/// stays over what the system says until it is named in `auto`; each field left out keeps
/// its value. `expensive` overrides the configuration (metered: cellular, a hotspot).
public struct NetworkSetting: Codable, Sendable, Equatable {
    /// A field of the setting, as `auto` names it.
    public enum Field: String, Codable, Sendable, CaseIterable {
        case expensive, kind, available
    }

    public var expensive: Bool?
    /// `wifi`, `cellular`, `ethernet`, `other`…: whose daily budget is spent.
    public var kind: String?
    public var available: Bool?
    /// The fields that go back to what the system says.
    public var auto: [Field]?

    public init(expensive: Bool? = nil, kind: String? = nil, available: Bool? = nil, auto: [Field]? = nil) {
        self.expensive = expensive
        self.kind = kind
        self.available = available
        self.auto = auto
    }
}

/// The conditions background transfers run under, the reply to `power` and `network`.
public struct TransferConditionsResult: Codable, Sendable, Equatable {
    public var power: PowerSource
    /// Whether `power` is an override (`voipctl power`) rather than read from the system.
    public var powerOverridden: Bool
    public var networkAvailable: Bool
    public var networkKind: String
    public var expensive: Bool
    /// The network's fields set by `voipctl network` rather than read from the system.
    public var networkOverridden: [NetworkSetting.Field]

    public init(power: PowerSource, powerOverridden: Bool, networkAvailable: Bool, networkKind: String, expensive: Bool,
                networkOverridden: [NetworkSetting.Field] = []) {
        self.power = power
        self.powerOverridden = powerOverridden
        self.networkAvailable = networkAvailable
        self.networkKind = networkKind
        self.expensive = expensive
        self.networkOverridden = networkOverridden
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        power = try container.decode(PowerSource.self, forKey: .power)
        powerOverridden = try container.decode(Bool.self, forKey: .powerOverridden)
        networkAvailable = try container.decode(Bool.self, forKey: .networkAvailable)
        networkKind = try container.decode(String.self, forKey: .networkKind)
        expensive = try container.decode(Bool.self, forKey: .expensive)
        // A voipd from before `auto` does not say.
        networkOverridden = try container.decodeIfPresent([NetworkSetting.Field].self, forKey: .networkOverridden) ?? []
    }
}

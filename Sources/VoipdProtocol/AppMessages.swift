import VoipdVocabulary

/// A request with no fields beyond its id.
public struct EmptyRequest: Codable, Sendable {
    public var id: UInt64
    public init(id: UInt64) { self.id = id }
}

/// A result with nothing in it.
public struct EmptyResult: Codable, Sendable, Equatable {
    public init() {}
}

/// A request that names one thing: the app (`hello`), one of its sockets (`registerSocket`,
/// `unregisterSocket`, `retrieveSocket`) or a background task (`beginBackgroundTask`).
public struct NamedRequest: Codable, Sendable {
    public var id: UInt64
    public var name: String
    public init(id: UInt64, name: String) {
        self.id = id
        self.name = name
    }
}

/// `hello` (type 1): an app identifies itself by name. The reply carries the sockets held
/// for it, one descriptor each, in the order of `sockets`.
public typealias HelloRequest = NamedRequest

public struct HelloResult: Codable, Sendable {
    /// The app as the daemon sees it (its state tells whether it was launched in the background).
    public var app: AppStatus
    /// Names of the held sockets handed back with this reply, in descriptor order.
    public var sockets: [String]
    /// How long one of the app's seconds lasts, in real seconds: voipd's `--time-scale` (1
    /// unless a test or a demo runs its lifecycle faster). The intervals the app gives voipd
    /// and reads from it (keep-alive, `reachableFor`, budgets) are in its own seconds; what
    /// it measures elsewhere (a registrar's grant) is in real ones. Absent from voipds
    /// before it: 1.
    public var timeScale: Double?
    public init(app: AppStatus, sockets: [String], timeScale: Double? = nil) {
        self.app = app
        self.sockets = sockets
        self.timeScale = timeScale
    }
}

/// `registerSocket` (type 2, one descriptor), `unregisterSocket` (3), `retrieveSocket` (4,
/// the reply carries one descriptor).
public typealias SocketNameRequest = NamedRequest

public struct SocketResult: Codable, Sendable {
    public var socket: HeldSocketStatus
    public init(socket: HeldSocketStatus) { self.socket = socket }
}

/// `acknowledge` (type 5): the app has handled the event; no reply.
public struct AcknowledgeMessage: Codable, Sendable {
    public var event: UInt64
    public init(event: UInt64) { self.event = event }
}

/// `beginBackgroundTask` (type 6).
public typealias BeginBackgroundTaskRequest = NamedRequest

public struct BackgroundTaskResult: Codable, Sendable {
    /// The task's identifier; 0 (UIBackgroundTaskInvalid) when the request was refused.
    public var task: UInt64
    public init(task: UInt64) { self.task = task }
}

/// `endBackgroundTask` (type 7).
public struct EndBackgroundTaskRequest: Codable, Sendable {
    public var id: UInt64
    public var task: UInt64
    public init(id: UInt64, task: UInt64) {
        self.id = id
        self.task = task
    }
}

/// `setKeepAliveTimeout` (type 8): `seconds` nil clears it.
public struct SetKeepAliveRequest: Codable, Sendable {
    public var id: UInt64
    public var seconds: Double?
    /// How long the app stays reachable without a wake, when it knows (a SIP phone: what its
    /// registrar's grant leaves after its last refresh). voipd warns, in its log and in
    /// `status`, when the keep-alive cannot wake it that often.
    public var reachableFor: Double?
    public init(id: UInt64, seconds: Double?, reachableFor: Double? = nil) {
        self.id = id
        self.seconds = seconds
        self.reachableFor = reachableFor
    }
}

/// `setAudioSessionActive` (type 9): the app's audio session became active (a call began)
/// or inactive (it ended), as AVAudioSession's `setActive(_:)`.
public struct SetAudioSessionActiveRequest: Codable, Sendable {
    public var id: UInt64
    public var active: Bool
    public init(id: UInt64, active: Bool) {
        self.id = id
        self.active = active
    }
}

/// `event` (type 129): a lifecycle event for the app, to be acknowledged with its `event` id.
public struct EventMessage: Codable, Sendable, Equatable {
    public var event: UInt64
    public var kind: AppEventKind
    /// For voipSocketReadable: the socket's name, the bytes waiting, and whether the peer
    /// hung up.
    public var socket: String?
    public var bytesAvailable: Int?
    public var peerClosed: Bool?
    /// For voipSocketReadable of a listening socket: the connections waiting to be accepted.
    public var connectionsWaiting: Int?
    /// For backgroundTransferEvents: the delivery's events.
    public var transfers: TransferEventsPayload?
    /// The app's state after this event.
    public var state: AppState
    public var reason: String

    public init(event: UInt64, kind: AppEventKind, socket: String? = nil, bytesAvailable: Int? = nil,
                peerClosed: Bool? = nil, connectionsWaiting: Int? = nil, transfers: TransferEventsPayload? = nil, state: AppState, reason: String) {
        self.event = event
        self.kind = kind
        self.socket = socket
        self.bytesAvailable = bytesAvailable
        self.peerClosed = peerClosed
        self.connectionsWaiting = connectionsWaiting
        self.transfers = transfers
        self.state = state
        self.reason = reason
    }
}

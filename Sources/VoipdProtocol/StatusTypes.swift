import VoipdVocabulary

/// One app as `status` reports it. Field names are stable; scripts rely on them.
public struct AppStatus: Codable, Sendable, Equatable {
    public var name: String
    /// Nil while no process runs.
    public var pid: Int32?
    public var state: AppState
    /// VoIP sockets held for the app.
    public var voipSockets: Int
    /// voipSocketReadable and keepAlive wakes delivered.
    public var wakes: Int
    public var connected: Bool
    public var uid: UInt32
    public var launchedByVoipd: Bool
    /// Why the process ended last, if it did.
    public var terminationReason: TerminationReason?
    public var backgroundTasks: Int
    public var keepAliveSeconds: Double?
    public var launches: Int
    /// Ordinary sockets reclaimed so far.
    public var reclaimedSockets: Int
    public var residentBytes: UInt64?
    /// Memory of the app's process in swap (`VmSwap`).
    public var swappedBytes: UInt64?
    /// Where a suspended app's memory is: nil unless hibernation concerned it.
    public var hibernation: HibernationStatus?
    /// Wall-clock time (seconds since the epoch) of the last state change.
    public var since: Double
    public var arguments: [String]?
    /// How voipd suspends the running process: "cgroup v2 freezer", "cgroup v1 freezer" or
    /// "SIGSTOP"; nil while no process runs.
    public var suspension: String?
    /// In a call (its audio session is active) for this many seconds; nil: not in a call.
    public var inCallSeconds: Double?
    /// Whether data can wake it: a VoIP socket is held for it. Nil when its manifest says
    /// `"reachable": false` (it is meant to be suspended unreachable).
    public var reachable: Bool?
    /// The shortest keep-alive interval it may ask for, in its own (unscaled) seconds: 600
    /// unless its manifest or voipd's configuration says otherwise.
    public var keepAliveMinimumSeconds: Double?
    /// How long it said it stays reachable without a wake (`setKeepAliveTimeout`'s
    /// `reachableFor`), in its own seconds.
    public var reachableForSeconds: Double?
    /// Set when its keep-alive cannot wake it as often as it needs to stay reachable (a
    /// registrar granting less than the keep-alive minimum covers): what and how to fix it.
    public var keepAliveWarning: String?

    public init(name: String, pid: Int32?, state: AppState, voipSockets: Int, wakes: Int, connected: Bool, uid: UInt32,
                launchedByVoipd: Bool, terminationReason: TerminationReason?, backgroundTasks: Int, keepAliveSeconds: Double?,
                launches: Int, reclaimedSockets: Int, residentBytes: UInt64?, since: Double, arguments: [String]?,
                suspension: String? = nil, inCallSeconds: Double? = nil, swappedBytes: UInt64? = nil,
                hibernation: HibernationStatus? = nil, reachable: Bool? = nil) {
        self.name = name
        self.pid = pid
        self.state = state
        self.voipSockets = voipSockets
        self.wakes = wakes
        self.connected = connected
        self.uid = uid
        self.launchedByVoipd = launchedByVoipd
        self.terminationReason = terminationReason
        self.backgroundTasks = backgroundTasks
        self.keepAliveSeconds = keepAliveSeconds
        self.launches = launches
        self.reclaimedSockets = reclaimedSockets
        self.residentBytes = residentBytes
        self.since = since
        self.arguments = arguments
        self.suspension = suspension
        self.inCallSeconds = inCallSeconds
        self.swappedBytes = swappedBytes
        self.hibernation = hibernation
        self.reachable = reachable
    }

    /// For an adopted program: its rules, the sockets voipd holds for it and what it last
    /// measured (nil for other apps).
    public var adoption: AdoptionStatus?
}

/// An adopted program as `status` reports it: nothing about it fails silently.
public struct AdoptionStatus: Codable, Sendable, Equatable {
    /// The adoption rules, as given.
    public var rules: [String]
    /// The sockets the last look adopted, each with the rule that took it and why.
    public var adopted: [String]
    /// How many of the program's TCP and UDP sockets no rule took.
    public var ignored: Int
    /// Wall-clock time of the last look (nil: none yet; it looks when it is backgrounded).
    public var lastLook: Double?
    /// What the last look could not do (no socket matched, a limit reached, a process whose
    /// descriptors could not be read, a copy refused), or nil when all went well.
    public var warning: String?
    /// The quiet detector's last verdict while it ran in the background.
    public var activity: String?

    public init(rules: [String], adopted: [String], ignored: Int, lastLook: Double?, warning: String?, activity: String?) {
        self.rules = rules
        self.adopted = adopted
        self.ignored = ignored
        self.lastLook = lastLook
        self.warning = warning
        self.activity = activity
    }
}

/// One held VoIP socket as `sockets` reports it.
public struct HeldSocketStatus: Codable, Sendable, Equatable {
    public var app: String
    public var name: String
    /// "tcp", "unix-stream", …
    public var kind: String
    /// "connected", "listening" (a TCP listener) or "unconnected" (a UDP socket taking
    /// datagrams from anyone), as when it was registered; nil from an older voipd.
    public var role: String?
    /// Bytes waiting (`FIONREAD`); 0 for a listening socket.
    public var bytesAvailable: Int
    /// For a listening socket, the connections waiting to be accepted; nil otherwise.
    public var connectionsWaiting: Int?
    public var peerClosed: Bool
    /// Whether voipd is watching it for data now (the app is suspended or dead).
    public var watching: Bool
    /// Wall-clock time it was registered.
    public var registeredAt: Double

    public init(app: String, name: String, kind: String, role: String? = nil, bytesAvailable: Int, connectionsWaiting: Int? = nil,
                peerClosed: Bool, watching: Bool, registeredAt: Double) {
        self.app = app
        self.name = name
        self.kind = kind
        self.role = role
        self.bytesAvailable = bytesAvailable
        self.connectionsWaiting = connectionsWaiting
        self.peerClosed = peerClosed
        self.watching = watching
        self.registeredAt = registeredAt
    }
}

/// One state change, as the event stream reports it.
public struct TransitionRecord: Codable, Sendable, Equatable {
    /// Wall-clock time, seconds since the epoch.
    public var time: Double
    public var app: String
    public var from: AppState
    public var to: AppState
    public var reason: String

    public init(time: Double, app: String, from: AppState, to: AppState, reason: String) {
        self.time = time
        self.app = app
        self.from = from
        self.to = to
        self.reason = reason
    }
}

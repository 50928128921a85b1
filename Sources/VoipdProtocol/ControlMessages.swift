import VoipdVocabulary

/// `launch` (type 16): start a program under supervision, in a session of its own. Up to two
/// descriptors may come along: the first becomes the program's standard output, the second
/// its standard error (one alone serves both); without them the program shares voipd's.
public struct LaunchRequest: Codable, Sendable {
    public var id: UInt64
    /// The app's name; defaults to the program's base name. Without `arguments`, the name
    /// of an app manifest to launch.
    public var name: String?
    /// The command and its arguments; absent or empty to launch the manifest named `name`.
    public var arguments: [String]?
    /// `KEY=VALUE` pairs added to voipd's environment.
    public var environment: [String]?
    public var workingDirectory: String?
    /// Start in the background rather than the foreground.
    public var background: Bool?
    /// Reply only once the app has connected (or exited).
    public var waitForConnection: Bool?
    /// The program connects and acknowledges events (default true).
    public var speaksProtocol: Bool?
    /// Terminated instead of suspended (UIApplicationExitsOnSuspend).
    public var exitsOnSuspend: Bool?
    /// Relaunched when data arrives on its held sockets after it died (default true).
    public var relaunchOnData: Bool?
    /// Adoption rules (`sip`, `udp:local=*:5062`, …; docs/LIFECYCLE.md, "Adopted programs"):
    /// voipd finds the program's VoIP sockets itself, holds copies of them, and suspends it
    /// when it is measured quiet. Implies `speaksProtocol` false unless that is given.
    public var adopt: [String]?

    public init(id: UInt64, name: String? = nil, arguments: [String]?, environment: [String]? = nil,
                workingDirectory: String? = nil, background: Bool? = nil, waitForConnection: Bool? = nil,
                speaksProtocol: Bool? = nil, exitsOnSuspend: Bool? = nil, relaunchOnData: Bool? = nil, adopt: [String]? = nil) {
        self.id = id
        self.name = name
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.background = background
        self.waitForConnection = waitForConnection
        self.speaksProtocol = speaksProtocol
        self.exitsOnSuspend = exitsOnSuspend
        self.relaunchOnData = relaunchOnData
        self.adopt = adopt
    }
}

/// A result naming one app.
public struct AppResult: Codable, Sendable {
    public var app: AppStatus
    public init(app: AppStatus) { self.app = app }
}

/// `status` (type 17) and `sockets` (type 18): one app by name, or all.
public struct AppQueryRequest: Codable, Sendable {
    public var id: UInt64
    public var name: String?
    public init(id: UInt64, name: String? = nil) {
        self.id = id
        self.name = name
    }
}

public struct StatusResult: Codable, Sendable {
    public var apps: [AppStatus]
    public init(apps: [AppStatus]) { self.apps = apps }
}

public struct SocketsResult: Codable, Sendable {
    public var sockets: [HeldSocketStatus]
    public init(sockets: [HeldSocketStatus]) { self.sockets = sockets }
}

/// What `appCommand` (type 19) does to an app.
public enum AppVerb: String, Codable, Sendable, CaseIterable {
    case background, foreground, interrupt, interruptEnd, terminate, kill, reclaim, hibernate
    /// Drop a dead app's record and close every socket held for it.
    case forget
}

public struct AppCommandRequest: Codable, Sendable {
    public var id: UInt64
    public var verb: AppVerb
    public var name: String
    public init(id: UInt64, verb: AppVerb, name: String) {
        self.id = id
        self.verb = verb
        self.name = name
    }
}

/// What `systemCommand` (type 20) does to the whole system.
public enum SystemVerb: String, Codable, Sendable, CaseIterable {
    /// Lock the screen: suspended apps' ordinary sockets are reclaimed (TN2277's recipe).
    case lock
    case unlock
    /// Act as if memory ran short: reclaim, then terminate `count` apps in jetsam order.
    case memoryPressure
    /// Where the power comes from, for background transfers (`power`).
    case power
    /// The network as background transfers see it (`network`).
    case network
}

public struct SystemCommandRequest: Codable, Sendable {
    public var id: UInt64
    public var verb: SystemVerb
    public var level: MemoryPressureLevel?
    public var count: Int?
    /// For `power`.
    public var power: PowerSetting?
    /// For `network`.
    public var network: NetworkSetting?
    public init(id: UInt64, verb: SystemVerb, level: MemoryPressureLevel? = nil, count: Int? = nil,
                power: PowerSetting? = nil, network: NetworkSetting? = nil) {
        self.id = id
        self.verb = verb
        self.level = level
        self.count = count
        self.power = power
        self.network = network
    }
}

public struct SystemCommandResult: Codable, Sendable {
    /// The apps acted on (reclaimed or terminated), in order.
    public var apps: [String]
    public init(apps: [String]) { self.apps = apps }
}

/// `events` (type 21): the recent transitions, then (with `follow`) each new one as a
/// `transition` frame (type 130) until the client disconnects.
public struct EventsRequest: Codable, Sendable {
    public var id: UInt64
    public var name: String?
    public var follow: Bool?
    /// Only transitions to these states (absent: all).
    public var to: [AppState]?
    public init(id: UInt64, name: String? = nil, follow: Bool? = nil, to: [AppState]? = nil) {
        self.id = id
        self.name = name
        self.follow = follow
        self.to = to
    }
}

public struct EventsResult: Codable, Sendable {
    public var transitions: [TransitionRecord]
    public init(transitions: [TransitionRecord]) { self.transitions = transitions }
}

/// `upgrade` (type 23): voipd re-executes itself in place, keeping every app, connection and
/// held socket; the reply comes from the new program.
public struct UpgradeResult: Codable, Sendable {
    /// The daemon's pid (unchanged).
    public var pid: Int32
    public var apps: Int
    public var heldSockets: Int
    public init(pid: Int32, apps: Int, heldSockets: Int) {
        self.pid = pid
        self.apps = apps
        self.heldSockets = heldSockets
    }
}

/// `stats` (type 22): counters in the Prometheus text exposition format.
public struct StatsResult: Codable, Sendable {
    public var prometheus: String
    public init(prometheus: String) { self.prometheus = prometheus }
}

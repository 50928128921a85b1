import VoipdVocabulary

/// What an app is allowed or asked to do, from how it was launched and its manifest.
public struct AppPolicy: Equatable, Sendable, Codable {
    /// UIApplicationExitsOnSuspend: terminated instead of suspended.
    public var exitsOnSuspend = false
    /// The supervisor knows how to start it (it launched it, or a manifest says how).
    public var canLaunch = false
    /// Relaunched in the background when data arrives on a held socket after it died.
    public var relaunchOnData = true
    /// Keeps running in the background without being suspended (a background mode such as
    /// audio playback); still woken and reclaimed like any app when it is suspended.
    public var runsInBackground = false
    /// Whether a launched process is expected to connect and acknowledge events. An app
    /// that does not is suspended and resumed without being told.
    public var speaksProtocol = true
    /// A program adopted without its cooperation: it cannot say when it has finished, so in
    /// the background it is suspended only once its supervisor has measured it quiet
    /// (``LifecycleInput/quietMeasured``), not on entering the background nor at the end of a
    /// wake budget. A call (an audio thread) keeps it running for as long as it lasts.
    public var suspendsWhenQuiet = false
    /// May stay running in the background while in a call (an active audio session).
    public var allowsCalls = true
    /// The shortest keep-alive interval the app may ask for, from its manifest (nil: the
    /// timings' `keepAliveMinimum`); never below the timings' `keepAliveFloor`.
    public var keepAliveMinimum: Duration?

    public init(exitsOnSuspend: Bool = false, canLaunch: Bool = false, relaunchOnData: Bool = true,
                runsInBackground: Bool = false, speaksProtocol: Bool = true, suspendsWhenQuiet: Bool = false,
                allowsCalls: Bool = true, keepAliveMinimum: Duration? = nil) {
        self.exitsOnSuspend = exitsOnSuspend
        self.canLaunch = canLaunch
        self.relaunchOnData = relaunchOnData
        self.runsInBackground = runsInBackground
        self.speaksProtocol = speaksProtocol
        self.suspendsWhenQuiet = suspendsWhenQuiet
        self.allowsCalls = allowsCalls
        self.keepAliveMinimum = keepAliveMinimum
    }

    /// A missing field takes its default: state files and upgrade snapshots written before
    /// a field existed still load.
    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = AppPolicy()
        func value(_ key: CodingKeys, _ fallback: Bool) throws -> Bool { try values.decodeIfPresent(Bool.self, forKey: key) ?? fallback }
        exitsOnSuspend = try value(.exitsOnSuspend, defaults.exitsOnSuspend)
        canLaunch = try value(.canLaunch, defaults.canLaunch)
        relaunchOnData = try value(.relaunchOnData, defaults.relaunchOnData)
        runsInBackground = try value(.runsInBackground, defaults.runsInBackground)
        speaksProtocol = try value(.speaksProtocol, defaults.speaksProtocol)
        suspendsWhenQuiet = try value(.suspendsWhenQuiet, defaults.suspendsWhenQuiet)
        allowsCalls = try value(.allowsCalls, defaults.allowsCalls)
        keepAliveMinimum = try values.decodeIfPresent(Duration.self, forKey: .keepAliveMinimum)
    }
}

/// Where an app is, in more detail than ``AppState``: `suspending` is a stop that the kernel
/// has not confirmed yet (publicly still `background`).
public enum LifecyclePhase: String, Equatable, Sendable, CaseIterable, Codable {
    case notRunning, active, inactive, background, suspending, suspended, terminated

    public var state: AppState {
        switch self {
        case .notRunning: return .notRunning
        case .active: return .active
        case .inactive: return .inactive
        case .background, .suspending: return .background
        case .suspended: return .suspended
        case .terminated: return .terminated
        }
    }

    /// Whether a process exists.
    public var isAlive: Bool { self != .notRunning && self != .terminated }
    /// Whether the process has been sent a stop.
    public var isStopped: Bool { self == .suspending || self == .suspended }
}

/// Where the app wants to be: the user's choice, which the lifecycle walks toward one
/// acknowledged event at a time.
public enum LifecycleGoal: String, Equatable, Sendable, Codable {
    case foreground, background
}

/// Whether events can reach the app.
public enum ControlConnection: String, Equatable, Sendable, Codable {
    /// Events are sent and acknowledgements awaited.
    case connected
    /// Launched and expected to connect: events wait for it.
    case awaiting
    /// No connection: events cannot be delivered and count as acknowledged at once.
    case none
}

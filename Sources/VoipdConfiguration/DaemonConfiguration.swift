import VoipdLifecycle

/// Everything the daemon needs to know to run.
public struct DaemonConfiguration: Sendable {
    /// The control socket's path.
    public var socketPath: String
    /// The lifecycle's durations (already scaled by `timeScale`).
    public var timings: LifecycleTimings
    /// Every duration is multiplied by this (tests run at 0.01). Durations apps ask for
    /// (keep-alive timeouts) are scaled too, so apps keep using iOS's numbers.
    public var timeScale: Double = 1
    /// The most VoIP sockets one app may have held.
    public var socketQuota: Int = 64
    public var logLevel: LogLevel = .info
    /// Transitions kept for `voipctl events`.
    public var eventHistory: Int = 1000
    /// A PSI trigger on /proc/pressure/memory ("some STALL_US WINDOW_US"); nil: none. The
    /// window is a multiple of 2 s, which the kernel requires of writers without
    /// CAP_SYS_RESOURCE.
    public var memoryPressureTrigger: String? = "some 150000 2000000"
    /// Permissions of the control socket.
    public var socketMode: UInt32 = 0o666
    /// The environment voipd started with (NOTIFY_SOCKET, LISTEN_FDS, …).
    public var environment: [String: String] = [:]
    /// The directory of app manifests (one JSON file per app).
    public var appsDirectory: String = DaemonConfiguration.defaultAppsDirectory
    /// Where the state file goes (``RecoveryState``): nil for the control socket's
    /// directory, "" for nowhere.
    public var stateDirectory: String?
    /// What one user or connection may cost voipd.
    public var limits = DaemonLimits()
    /// How apps are suspended: the cgroup freezer where voipd can use it, or signals.
    public var suspension = SuspensionChoice.auto
    /// Where the apps' cgroups go (nil: voipd's own cgroup when it is delegated to it).
    public var cgroupDirectory: String?
    /// How suspended apps are hibernated.
    public var hibernation = HibernationSettings()
    /// An ordinary stream socket of a suspended app whose receive queue reaches this many
    /// bytes is reclaimed (nil: never). 1 MiB: far above what a presence or chat connection
    /// queues, far below what TCP absorbs.
    public var reclaimQueuedBytes: Int? = 1 << 20
    /// Background transfers (docs/TRANSFERS.md).
    public var transfers = TransferSettings()
    /// Where the configuration came from, to read it again on SIGHUP: the file (nil: none)
    /// and the command line's settings, which keep precedence.
    public var source = ConfigurationSource()

    public static let defaultAppsDirectory = "/etc/voipd/apps.d"

    public init(socketPath: String, timings: LifecycleTimings = LifecycleTimings()) {
        self.socketPath = socketPath
        self.timings = timings
    }
}

/// How the configuration asks voipd to suspend apps.
public enum SuspensionChoice: String, Sendable {
    /// The cgroup freezer where voipd can use it, SIGSTOP otherwise.
    case auto
    /// The cgroup freezer, or voipd does not start.
    case freezer
    /// SIGSTOP and SIGCONT.
    case signal
}

/// Where a configuration came from.
public struct ConfigurationSource: Sendable {
    public var file: String?
    public var commandLine = ConfigurationFile()

    public init(file: String? = nil, commandLine: ConfigurationFile = ConfigurationFile()) {
        self.file = file
        self.commandLine = commandLine
    }

    /// Reads the file again (if any) and resolves it under the command line's settings.
    public func load(environment: [String: String]) throws(ConfigurationError) -> DaemonConfiguration {
        var fromFile = ConfigurationFile()
        if let file { fromFile = try ConfigurationFile.load(file) }
        var configuration = try fromFile.overlaid(by: commandLine).resolve(environment: environment, file: file)
        configuration.source = self
        return configuration
    }
}

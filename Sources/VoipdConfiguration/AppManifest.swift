import FoundationEssentials
import Glibc
import VoipdAdoption
import VoipdLifecycle
import VoipdSystem

/// One app's manifest: how to start it and what it may do. One JSON file per app in the
/// apps directory; docs/CONFIGURATION.md describes every key.
public struct AppManifest: Codable, Sendable, Equatable {
    /// The app's name (default: the file's name without `.json`).
    public var name: String?
    /// The program (a path, or a name looked up in PATH).
    public var command: String
    public var arguments: [String]?
    public var environment: [String: String]?
    public var workingDirectory: String?
    /// The user to run as (a name or a uid), when voipd runs as root.
    public var user: String?
    /// iOS's UIBackgroundModes: "voip" (may hold VoIP sockets and set a keep-alive),
    /// "audio" (keeps running in the background, never suspended while it runs).
    public var backgroundModes: [String]?
    /// UIApplicationExitsOnSuspend.
    public var exitsOnSuspend: Bool?
    /// "onData" (default): relaunched in the background when data arrives after it died;
    /// "never".
    public var relaunch: String?
    /// Whether it talks to voipd (default true).
    public var speaksProtocol: Bool?
    /// VoIP sockets it may have held (default: the daemon's quota).
    public var socketQuota: Int?
    /// Launched in the background when voipd starts, as iOS did for VoIP apps at boot.
    public var launchAtStart: Bool?
    /// `PR_SET_NO_NEW_PRIVS` (default true): false lets the app gain privileges through
    /// set-uid programs and file capabilities.
    public var noNewPrivileges: Bool?
    /// Adoption rules (`["sip"]`): voipd finds and holds the program's VoIP sockets itself
    /// and suspends it in the background once it is measured quiet. Implies
    /// `speaksProtocol` false unless that is given.
    public var adopt: [String]?
    /// For an adopted program: how long it must stay below both rates to count as quiet
    /// (default 5), and the rates: wake-ups a second (default 20) and CPU milliseconds a
    /// second (default 20), all threads together.
    public var quietWindowSeconds: Double?
    public var quietWakeupsPerSecond: Double?
    public var quietCPUMillisecondsPerSecond: Double?
    /// For an adopted program, which cannot ask for keep-alive wakes: how often it is
    /// resumed so that its own timers re-register (default and minimum: the keep-alive minimum).
    public var keepAliveSeconds: Double?
    /// Whether it may stay running in the background while in a call, its audio session
    /// active (default true); false: it is suspended as usual, call or not.
    public var calls: Bool?
    /// Whether it is meant to be reachable when suspended (default true): false says that
    /// an app with no VoIP socket is suspended on purpose, and voipd does not warn.
    public var reachable: Bool?
    /// The shortest keep-alive interval it may ask for, in seconds (default: the daemon's
    /// `keepAliveMinimum`, 600 s), for a registrar that grants less than that covers; at
    /// least the daemon's `keepAliveFloor` (60 s).
    public var keepAliveMinimum: Double?

    static let keys: Set<String> = ["name", "command", "arguments", "environment", "workingDirectory", "user", "backgroundModes",
                                    "exitsOnSuspend", "relaunch", "speaksProtocol", "socketQuota", "launchAtStart", "noNewPrivileges",
                                    "adopt", "quietWindowSeconds", "quietWakeupsPerSecond", "quietCPUMillisecondsPerSecond",
                                    "keepAliveSeconds", "calls", "reachable", "keepAliveMinimum"]
    static let knownBackgroundModes: Set<String> = ["voip", "audio"]
}

/// A manifest checked and resolved: everything voipd needs to start and supervise the app.
public struct ResolvedManifest: Sendable, Equatable {
    public var name: String
    public var file: String
    public var arguments: [String]
    public var environment: [String]
    public var workingDirectory: String?
    /// Who it runs as; nil: as voipd.
    public var account: Account?
    public var policy: AppPolicy
    public var socketQuota: Int?
    /// Whether it may hold VoIP sockets and set a keep-alive ("voip" in its background modes,
    /// or no background modes given).
    public var allowsVoIP: Bool
    public var launchAtStart: Bool
    /// Started with `PR_SET_NO_NEW_PRIVS`.
    public var noNewPrivileges: Bool = true
    /// An adopted program's rules and thresholds; nil for an app that is not adopted.
    public var adoption: AdoptionSettings?
    /// Whether it is meant to be woken by data when suspended (`"reachable"`, default true).
    public var expectsReachable: Bool = true

    /// A user account, resolved once.
    public struct Account: Sendable, Equatable, Codable {
        public var name: String
        public var uid: uid_t
        public var gid: gid_t
    }
}

/// The manifests of the apps directory.
public enum ManifestCatalog {
    /// Every `*.json` file of `directory`, resolved; the files in error are reported, not
    /// loaded. A missing directory has no manifests.
    /// `timings` (scaled by `timeScale`) bound the manifests' durations.
    public static func load(_ directory: String, socketQuota: Int, timings: LifecycleTimings = LifecycleTimings(),
                            timeScale: Double = 1) -> (manifests: [String: ResolvedManifest], errors: [ConfigurationError]) {
        let entries: [String]
        do {
            entries = try DirectoryEntry.names(in: directory)
        } catch {
            // No apps directory is no manifests; one that cannot be read is said, not taken for none.
            guard error.rawValue != ENOENT else { return ([:], []) }
            return ([:], [ConfigurationError(key: "appsDirectory", "cannot read \(directory): \(error)")])
        }
        var manifests: [String: ResolvedManifest] = [:]
        var errors: [ConfigurationError] = []
        for entry in entries.sorted() where entry.hasSuffix(".json") && !entry.hasPrefix(".") {
            let path = directory + "/" + entry
            do {
                let manifest = try resolve(path: path, socketQuota: socketQuota, timings: timings, timeScale: timeScale)
                if let other = manifests[manifest.name] {
                    throw ConfigurationError(file: path, key: "name", "\(manifest.name) is already the name of \(other.file)")
                }
                manifests[manifest.name] = manifest
            } catch {
                errors.append(error as? ConfigurationError ?? ConfigurationError(file: path, "\(error)"))
            }
        }
        return (manifests, errors)
    }

    public static func resolve(path: String, socketQuota: Int, timings: LifecycleTimings = LifecycleTimings(),
                               timeScale: Double = 1) throws(ConfigurationError) -> ResolvedManifest {
        let manifest = try ConfigurationFile.decode(ConfigurationFile.read(path), file: path, as: AppManifest.self, keys: AppManifest.keys)
        func fail(_ key: String, _ message: String) -> ConfigurationError { ConfigurationError(file: path, key: key, message) }
        let fileName = String(path.split(separator: "/").last ?? "").replacing(".json", with: "")
        let name = manifest.name ?? fileName
        do { try NameRule.check(name, what: "app") } catch { throw fail("name", error.message) }
        guard !manifest.command.isEmpty else { throw fail("command", "must not be empty") }
        if let directory = manifest.workingDirectory, !directory.hasPrefix("/") {
            throw fail("workingDirectory", "must be an absolute path, not \(directory)")
        }
        var environment: [String] = []
        for (key, value) in (manifest.environment ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard !key.isEmpty, !key.contains("="), !key.contains("\0"), !value.contains("\0") else {
                throw fail("environment.\(key)", "not a valid variable")
            }
            environment.append("\(key)=\(value)")
        }
        let modes = Set(manifest.backgroundModes ?? ["voip"])
        if let unknown = modes.subtracting(AppManifest.knownBackgroundModes).sorted().first {
            throw fail("backgroundModes", "unknown mode \(unknown) (known: \(AppManifest.knownBackgroundModes.sorted().joined(separator: ", ")))")
        }
        let relaunch = manifest.relaunch ?? "onData"
        guard ["onData", "never"].contains(relaunch) else { throw fail("relaunch", "must be \"onData\" or \"never\", not \(relaunch)") }
        if let quota = manifest.socketQuota, !(1...socketQuota).contains(quota) {
            throw fail("socketQuota", "must be 1…\(socketQuota) (the daemon's quota), not \(quota)")
        }
        var account: ResolvedManifest.Account?
        if let user = manifest.user {
            guard let found = lookUpAccount(user) else { throw fail("user", "no such user \(user)") }
            if found.uid != geteuid() && geteuid() != 0 {
                throw fail("user", "voipd runs as uid \(geteuid()) and cannot start programs as \(user); only root can")
            }
            account = found
        }
        let adoption = try adoptionSettings(manifest, fail: fail)
        if let minimum = manifest.keepAliveMinimum {
            // In the app's own seconds, as its keep-alive requests are.
            let floor = timings.keepAliveFloor.seconds / timeScale
            guard minimum >= floor, minimum <= LifecycleTimings.longest.seconds else {
                throw fail("keepAliveMinimum", "must be \(SecondsFormat.tenths(floor))…\(Int(LifecycleTimings.longest.seconds)) seconds (from the daemon's keepAliveFloor to a year), not \(minimum)")
            }
        }
        let policy = AppPolicy(exitsOnSuspend: manifest.exitsOnSuspend ?? false, canLaunch: true, relaunchOnData: relaunch == "onData",
                               runsInBackground: modes.contains("audio"), speaksProtocol: manifest.speaksProtocol ?? (adoption == nil),
                               suspendsWhenQuiet: adoption != nil, allowsCalls: manifest.calls ?? true,
                               keepAliveMinimum: manifest.keepAliveMinimum.map { .seconds($0) * timeScale })
        return ResolvedManifest(name: name, file: path, arguments: [manifest.command] + (manifest.arguments ?? []), environment: environment,
                                workingDirectory: manifest.workingDirectory, account: account, policy: policy,
                                socketQuota: manifest.socketQuota, allowsVoIP: modes.contains("voip"),
                                launchAtStart: manifest.launchAtStart ?? false, noNewPrivileges: manifest.noNewPrivileges ?? true,
                                adoption: adoption, expectsReachable: manifest.reachable ?? true)
    }

    /// The adoption keys, checked: nil when `adopt` is absent or empty (and then the other
    /// adoption keys are refused, since they would do nothing).
    private static func adoptionSettings(_ manifest: AppManifest, fail: (String, String) -> ConfigurationError) throws(ConfigurationError) -> AdoptionSettings? {
        let tuning: [(key: String, value: Double?, range: ClosedRange<Double>)] = [
            ("quietWindowSeconds", manifest.quietWindowSeconds, 0.1...3600),
            ("quietWakeupsPerSecond", manifest.quietWakeupsPerSecond, 0...100_000),
            ("quietCPUMillisecondsPerSecond", manifest.quietCPUMillisecondsPerSecond, 0...100_000),
            ("keepAliveSeconds", manifest.keepAliveSeconds, 1...LifecycleTimings.longest.seconds),
        ]
        guard let rules = manifest.adopt, !rules.isEmpty else {
            if let given = tuning.first(where: { $0.value != nil }) { throw fail(given.key, "applies only to an adopted program (give \"adopt\")") }
            return nil
        }
        for entry in tuning {
            if let value = entry.value, !entry.range.contains(value) {
                throw fail(entry.key, "must be \(entry.range.lowerBound)…\(entry.range.upperBound), not \(value)")
            }
        }
        let policy: AdoptionPolicy
        do { policy = try AdoptionPolicy(parsing: rules) } catch { throw fail("adopt", "\(error)") }
        let defaults = QuietThresholds()
        let thresholds = QuietThresholds(window: manifest.quietWindowSeconds.map { .seconds($0) } ?? defaults.window,
                                         wakeupsPerSecond: manifest.quietWakeupsPerSecond ?? defaults.wakeupsPerSecond,
                                         cpuPerSecond: manifest.quietCPUMillisecondsPerSecond.map { .milliseconds($0) } ?? defaults.cpuPerSecond)
        return AdoptionSettings(policy: policy, thresholds: thresholds, keepAlive: manifest.keepAliveSeconds.map { .seconds($0) })
    }

    /// A user by name or uid (getpwnam_r / getpwuid_r).
    public static func lookUpAccount(_ user: String) -> ResolvedManifest.Account? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16384)
        if let uid = uid_t(user) {
            getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
        } else {
            getpwnam_r(user, &entry, &buffer, buffer.count, &result)
        }
        guard let found = result?.pointee else { return nil }
        return ResolvedManifest.Account(name: String(cString: found.pw_name), uid: found.pw_uid, gid: found.pw_gid)
    }
}

import Glibc
import VoipdProtocol
import VoipdSystem

/// How voipd starts an app's process: the account, environment, limits and restrictions it
/// gets (docs/SECURITY.md). The spawn itself changes credentials before anything of the
/// request is used (``spawn(_:)``).
extension Daemon {
    /// The umask every app starts with, whatever voipd's own.
    static let appUmask: mode_t = 0o022

    /// The spawn of an app's process from its launch specification.
    func spawnRequest(for app: AppRecord, _ specification: LaunchSpecification) throws -> SpawnRequest {
        var credentials: SpawnCredentials?
        var environment: [String]
        if let account = specification.account, account.uid != geteuid() {
            do {
                credentials = try SpawnCredentials(user: account.name, uid: account.uid, gid: account.gid)
            } catch {
                throw ProtocolError(.launchFailed, "cannot read the groups of \(account.name): \(error)")
            }
            environment = mergedEnvironment(Self.environment(forAccount: account), specification.environment)
        } else {
            environment = mergedEnvironment(currentEnvironment(), specification.environment)
        }
        // voipd's own variables are set by voipd alone; the service manager's are not the app's.
        let reserved = [LaunchEnvironment.socket + "=", LaunchEnvironment.appName + "=", "LISTEN_", "NOTIFY_SOCKET=", "WATCHDOG_"]
        environment = environment.filter { entry in !reserved.contains { entry.hasPrefix($0) } }
        environment += ["\(LaunchEnvironment.socket)=\(configuration.socketPath)", "\(LaunchEnvironment.appName)=\(app.name)"]
        return SpawnRequest(arguments: specification.arguments, environment: environment,
                            workingDirectory: specification.workingDirectory,
                            standardOutput: specification.standardOutputNumber, standardError: specification.standardErrorNumber,
                            credentials: credentials, resourceLimits: persistence.appResourceLimits, umask: Self.appUmask,
                            noNewPrivileges: apps.manifests[app.id]?.noNewPrivileges ?? true)
    }

    /// What an app running as another account gets before its own variables: where programs
    /// are and the locale, from voipd, and the account's identity. Nothing else of voipd's
    /// environment (the service manager's or an administrator's secrets) reaches it.
    static func environment(forAccount account: ResolvedManifest.Account) -> [String] {
        let passed = currentEnvironment().filter { entry in
            ["PATH=", "LANG=", "LANGUAGE=", "TZ=", "LC_"].contains { entry.hasPrefix($0) }
        }
        let entry = passwordEntry(uid: account.uid)
        var identity = ["USER=\(account.name)", "LOGNAME=\(account.name)"]
        if let home = entry?.home { identity.append("HOME=\(home)") }
        if let shell = entry?.shell { identity.append("SHELL=\(shell)") }
        return mergedEnvironment(passed, identity)
    }
}

/// A user's home directory and shell from the password database (`getpwuid_r`).
func passwordEntry(uid: uid_t) -> (home: String, shell: String)? {
    var entry = passwd()
    var result: UnsafeMutablePointer<passwd>?
    var buffer = [CChar](repeating: 0, count: 16384)
    getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
    return result.map { (String(cString: $0.pointee.pw_dir), String(cString: $0.pointee.pw_shell)) }
}

/// `base` with `overrides` applied by variable name: the later value wins, once.
func mergedEnvironment(_ base: [String], _ overrides: [String]) -> [String] {
    func key(_ entry: String) -> Substring { entry.prefix { $0 != "=" } }
    let overridden = Set(overrides.map(key))
    return base.filter { !overridden.contains(key($0)) } + overrides
}

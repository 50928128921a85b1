import Glibc
import VoipdLifecycle
import VoipdProtocol

/// `voipd`'s command line.
public enum DaemonCommandLine {
    public static let usage = """
    usage: voipd [--config FILE] [--check-config] [--socket PATH] [--log-level LEVEL]
                 [--time-scale FACTOR] [--timing NAME=SECONDS]... [--socket-quota N]
                 [--limit NAME=VALUE]... [--apps-directory DIR] [--state-directory DIR]
                 [--no-memory-pressure-trigger]
           voipd --version

    Supervises apps the iOS way: suspends them in the background, holds their VoIP sockets,
    and resumes them when data arrives. See README.md and docs/CONFIGURATION.md.

      --config FILE          JSON configuration (default: /etc/voipd/voipd.json if voipd runs
                             as root and it exists); flags take precedence over it
      --check-config         check the configuration and every app manifest, then exit
                             (0 valid, 78 not)
      --socket PATH          control socket (default: $VOIPD_SOCKET, else
                             $XDG_RUNTIME_DIR/voipd.sock, or /run/voipd/voipd.sock as root)
      --log-level LEVEL      error, warning, notice, info (default) or debug
      --time-scale FACTOR    multiply every lifecycle duration (tests use 0.01)
      --timing NAME=SECONDS  set one lifecycle duration (after scaling); see docs/CONFIGURATION.md
      --socket-quota N       VoIP sockets one app may have held (default 64, at most 253)
      --limit NAME=VALUE     set one limit of a user or connection (appsPerUser,
                             connectionsPerUser, heldSocketsPerUser, helloTimeout,
                             clientQueueBytes, totalQueueBytes); see docs/CONFIGURATION.md
      --apps-directory DIR   app manifests (default /etc/voipd/apps.d)
      --state-directory DIR  where voipd writes down its apps, so that the next voipd
                             resumes those a crash left stopped (default: the control
                             socket's directory; "" for none)
      --no-memory-pressure-trigger
                             do not watch /proc/pressure/memory
      --version              print voipd's version and protocol version, then exit

    SIGHUP reloads the configuration and manifests (keeping the old ones if the new are
    invalid); SIGUSR2 or `voipctl upgrade` re-executes voipd in place, keeping every app,
    connection and held socket.
    """

    public static let defaultConfigurationFile = "/etc/voipd/voipd.json"

    /// An error in the command line, with what to say (empty: print the usage).
    public struct UsageError: Error, CustomStringConvertible {
        public var description: String
    }

    /// What the command line asks for.
    public struct Invocation: Sendable {
        public var source: ConfigurationSource
        /// Only check the configuration and manifests.
        public var checkOnly = false
        /// Only print the version.
        public var versionOnly = false
        /// The descriptor holding an earlier voipd's state (an in-place upgrade).
        public var upgradeState: CInt?
        /// The arguments as given, to re-execute with on an upgrade.
        public var arguments: [String]
    }

    public static func parse(_ arguments: [String]) throws -> Invocation {
        var flags = ConfigurationFile()
        var file: String?
        var checkOnly = false
        var versionOnly = false
        var upgradeState: CInt?
        var iterator = arguments.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let next = iterator.next() else { throw UsageError(description: "\(flag) needs a value") }
            return next
        }
        func number<T: LosslessStringConvertible>(_ flag: String) throws -> T {
            let text = try value(flag)
            guard let parsed = T(text) else { throw UsageError(description: "\(flag) needs a number, not \(text)") }
            return parsed
        }
        /// `NAME=NUMBER`, merged into the settings given so far.
        func setting(_ flag: String, into settings: [String: Double]?, valueName: String) throws -> [String: Double] {
            let text = try value(flag)
            let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, let number = Double(parts[1]) else {
                throw UsageError(description: "\(flag) needs NAME=\(valueName), not \(text)")
            }
            return (settings ?? [:]).merging([parts[0]: number]) { $1 }
        }
        while let argument = iterator.next() {
            switch argument {
            case "--config": file = try value(argument)
            case "--check-config": checkOnly = true
            case "--version": versionOnly = true
            case "--socket": flags.socket = try value(argument)
            case "--log-level": flags.logLevel = try value(argument)
            case "--time-scale": flags.timeScale = try number(argument)
            case "--socket-quota": flags.socketQuota = try number(argument)
            case "--apps-directory": flags.appsDirectory = try value(argument)
            case "--state-directory": flags.stateDirectory = try value(argument)
            case "--timing": flags.timings = try setting(argument, into: flags.timings, valueName: "SECONDS")
            case "--limit": flags.limits = try setting(argument, into: flags.limits, valueName: "VALUE")
            case "--no-memory-pressure-trigger": flags.memoryPressureTrigger = ""
            case "--upgrade-from": upgradeState = try number(argument)
            case "-h", "--help": throw UsageError(description: "")
            default: throw UsageError(description: "unknown argument \(argument)")
            }
        }
        if file == nil && geteuid() == 0 && access(defaultConfigurationFile, F_OK) == 0 { file = defaultConfigurationFile }
        // Flags are checked on their own first, so a bad one is named as a flag.
        do {
            _ = try flags.resolve(environment: ["XDG_RUNTIME_DIR": "/run"], file: "command line")
        } catch {
            throw UsageError(description: "--\(flagName(error.key ?? "")): \(error.message)")
        }
        return Invocation(source: ConfigurationSource(file: file, commandLine: flags), checkOnly: checkOnly, versionOnly: versionOnly,
                          upgradeState: upgradeState, arguments: arguments.filterUpgradeState())
    }

    private static func flagName(_ key: String) -> String {
        switch key {
        case "logLevel": return "log-level"
        case "timeScale": return "time-scale"
        case "socketQuota": return "socket-quota"
        case "appsDirectory": return "apps-directory"
        case "stateDirectory": return "state-directory"
        case let timing where timing.hasPrefix("timings."): return "timing \(timing.dropFirst(8))"
        case let limit where limit.hasPrefix("limits."): return "limit \(limit.dropFirst(7))"
        default: return key
        }
    }
}

extension Array where Element == String {
    /// The arguments without `--upgrade-from N` (added afresh by each upgrade).
    func filterUpgradeState() -> [String] {
        var result: [String] = []
        var skipNext = false
        for argument in self {
            if skipNext { skipNext = false; continue }
            if argument == "--upgrade-from" { skipNext = true; continue }
            result.append(argument)
        }
        return result
    }
}

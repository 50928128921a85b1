import Glibc
import VoipdLifecycle
import VoipdProtocol

/// `voipd`'s command line.
public enum DaemonCommandLine {
    public static let usage = """
    usage: voipd [--socket PATH] [--time-scale FACTOR] [--timing NAME=SECONDS]... [--log-level LEVEL]
                 [--socket-quota N] [--no-memory-pressure-trigger]

    Supervises apps the iOS way: suspends them in the background, holds their VoIP sockets,
    and resumes them when data arrives. See README.md.

      --socket PATH          control socket (default: $VOIPD_SOCKET, else
                             $XDG_RUNTIME_DIR/voipd.sock, or /run/voipd/voipd.sock as root)
      --time-scale FACTOR    multiply every lifecycle duration (tests use 0.01)
      --timing NAME=SECONDS  set one lifecycle duration (after scaling); NAME is one of
                             \(LifecycleTimings.names.joined(separator: ", "))
      --log-level LEVEL      error, warning, notice, info (default) or debug
      --socket-quota N       VoIP sockets one app may have held (default 64, at most 253)
      --no-memory-pressure-trigger
                             do not watch /proc/pressure/memory
    """

    /// An error in the command line, with what to say.
    public struct UsageError: Error, CustomStringConvertible {
        public var description: String
    }

    public static func parse(_ arguments: [String], environment: [String: String]) throws -> DaemonConfiguration {
        var socket: String?
        var scale = 1.0
        var level = LogLevel.info
        var quota = 64
        var pressure = true
        var overrides: [(String, Double)] = []
        var iterator = arguments.makeIterator()
        func value(_ flag: String) throws -> String {
            guard let next = iterator.next() else { throw UsageError(description: "\(flag) needs a value") }
            return next
        }
        while let argument = iterator.next() {
            switch argument {
            case "--socket": socket = try value(argument)
            case "--time-scale":
                let text = try value(argument)
                guard let factor = Double(text), factor > 0 else { throw UsageError(description: "--time-scale needs a positive number, not \(text)") }
                scale = factor
            case "--log-level":
                let text = try value(argument)
                guard let parsed = LogLevel(name: text) else { throw UsageError(description: "unknown log level \(text)") }
                level = parsed
            case "--socket-quota":
                let text = try value(argument)
                guard let n = Int(text), n >= 1, n <= 253 else { throw UsageError(description: "--socket-quota must be 1…253, not \(text)") }
                quota = n
            case "--timing":
                let text = try value(argument)
                let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, let seconds = Double(parts[1]), LifecycleTimings().setting(parts[0], seconds: seconds) != nil else {
                    throw UsageError(description: "--timing needs NAME=SECONDS with NAME one of \(LifecycleTimings.names.joined(separator: ", ")), not \(text)")
                }
                overrides.append((parts[0], seconds))
            case "--no-memory-pressure-trigger": pressure = false
            case "-h", "--help": throw UsageError(description: "")
            default: throw UsageError(description: "unknown argument \(argument)")
            }
        }
        guard let path = ControlSocketPath.resolve(explicit: socket, environment: environment, isRoot: geteuid() == 0) else {
            throw UsageError(description: ControlSocketPath.unresolvedMessage)
        }
        var timings = LifecycleTimings().scaled(by: scale)
        for (name, seconds) in overrides { timings = timings.setting(name, seconds: seconds)! }
        var configuration = DaemonConfiguration(socketPath: path, timings: timings)
        configuration.timeScale = scale
        configuration.environment = environment
        configuration.logLevel = level
        configuration.socketQuota = quota
        if !pressure { configuration.memoryPressureTrigger = nil }
        return configuration
    }
}

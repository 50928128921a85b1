import FoundationEssentials
import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem

/// An error in the configuration (file, flag or manifest), naming the key. voipd exits with
/// 78 (EX_CONFIG) when it meets one at start, and keeps its configuration on a reload.
public struct ConfigurationError: Error, CustomStringConvertible {
    /// The file, when the error is in one.
    public var file: String?
    /// The key, dotted for nested ones ("timings.wakeBudget").
    public var key: String?
    public var message: String

    public init(file: String? = nil, key: String? = nil, _ message: String) {
        self.file = file
        self.key = key
        self.message = message
    }

    public var description: String {
        [file, key.map { "key \"\($0)\"" }, message].compactMap { $0 }.joined(separator: ": ")
    }

    /// EX_CONFIG from sysexits.h.
    public static let exitStatus: Int32 = 78
}

/// The settings of voipd, as the configuration file (JSON) spells them; every key is
/// optional and docs/CONFIGURATION.md gives each one's default. Command-line flags fill the
/// same structure and take precedence over the file.
public struct ConfigurationFile: Codable, Sendable, Equatable {
    /// The control socket's path.
    public var socket: String?
    /// Its permissions, in octal ("0660").
    public var socketMode: String?
    /// error, warning, notice, info or debug.
    public var logLevel: String?
    /// Every lifecycle duration is multiplied by this.
    public var timeScale: Double?
    /// Lifecycle durations in seconds, by name (after scaling).
    public var timings: [String: Double]?
    /// The most VoIP sockets one app may have held (1…253).
    public var socketQuota: Int?
    /// Transitions kept for `voipctl events`.
    public var eventHistory: Int?
    /// A PSI trigger on /proc/pressure/memory; "" for none.
    public var memoryPressureTrigger: String?
    /// The directory of app manifests.
    public var appsDirectory: String?
    /// The state file's directory ("" for none).
    public var stateDirectory: String?
    /// What one user or connection may cost voipd, by name (``DaemonLimits/names``).
    public var limits: [String: Double]?
    /// How apps are suspended: "auto", "freezer" or "signal" (``SuspensionChoice``).
    public var suspension: String?
    /// Where the apps' cgroups go, for the cgroup freezer.
    public var cgroupDirectory: String?
    /// How suspended apps are hibernated.
    public var hibernation: HibernationFile?
    /// Reclaim a suspended app's ordinary socket whose receive queue reaches this (0: never).
    public var reclaimQueuedBytes: Int?
    /// Background transfers (docs/TRANSFERS.md).
    public var transfers: TransfersFile?

    public init() {}

    /// The keys a file may have.
    public static let keys: Set<String> = ["socket", "socketMode", "logLevel", "timeScale", "timings", "socketQuota",
                                           "eventHistory", "memoryPressureTrigger", "appsDirectory",
                                           "stateDirectory", "limits", "suspension", "cgroupDirectory",
                                           "hibernation", "reclaimQueuedBytes", "transfers"]

    /// Reads and decodes a file; unknown keys and wrong types are errors naming the key.
    public static func load(_ path: String) throws(ConfigurationError) -> ConfigurationFile {
        try decode(read(path), file: path, as: ConfigurationFile.self, keys: keys,
                   nested: ["timings": Set(LifecycleTimings.names), "limits": Set(DaemonLimits.names),
                            "hibernation": HibernationFile.keys, "transfers": TransfersFile.keys])
    }

    /// The largest configuration file or manifest read.
    static let maximumFileSize = 1 << 20

    /// A configuration file's or a manifest's contents. Not `Data(contentsOf:)`: this
    /// toolchain's Foundation leaks 4 KiB on every empty file (found by Tests/Fuzz).
    static func read(_ path: String) throws(ConfigurationError) -> Data {
        do {
            let file = try openFile(path, flags: O_RDONLY)
            return Data(try file.readToEnd(limit: maximumFileSize))
        } catch .fileTooLarge {
            throw ConfigurationError(file: path, "larger than \(maximumFileSize) bytes")
        } catch {
            throw ConfigurationError(file: path, "cannot read it: \(error)")
        }
    }

    /// Decodes one JSON object, checking its keys first so a misspelt one is named.
    static func decode<T: Decodable>(_ data: Data, file: String, as type: T.Type, keys: Set<String>,
                                     nested: [String: Set<String>] = [:]) throws(ConfigurationError) -> T {
        let shape: JSONValue
        do {
            shape = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            let detail = context.underlyingError.map { "\($0)" } ?? context.debugDescription
            throw ConfigurationError(file: file, "not valid JSON: \(detail)")
        } catch {
            throw ConfigurationError(file: file, "not valid JSON: \(error)")
        }
        guard let members = shape.members else { throw ConfigurationError(file: file, "must be a JSON object") }
        for key in members.keys.sorted() where !keys.contains(key) {
            throw ConfigurationError(file: file, key: key, "unknown key (known: \(keys.sorted().joined(separator: ", ")))")
        }
        for (key, allowed) in nested {
            guard let inner = members[key]?.members else { continue }
            for name in inner.keys.sorted() where !allowed.contains(name) {
                throw ConfigurationError(file: file, key: "\(key).\(name)", "unknown key (known: \(allowed.sorted().joined(separator: ", ")))")
            }
        }
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let DecodingError.typeMismatch(expected, context) {
            throw ConfigurationError(file: file, key: path(context), "must be \(describe(expected))")
        } catch let DecodingError.valueNotFound(expected, context) {
            throw ConfigurationError(file: file, key: path(context), "must be \(describe(expected)), not null")
        } catch let DecodingError.keyNotFound(key, context) {
            throw ConfigurationError(file: file, key: (context.codingPath + [key]).map(\.stringValue).joined(separator: "."), "is required")
        } catch let DecodingError.dataCorrupted(context) {
            throw ConfigurationError(file: file, key: path(context), context.debugDescription)
        } catch {
            throw ConfigurationError(file: file, "\(error)")
        }
    }

    private static func path(_ context: DecodingError.Context) -> String? {
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return path.isEmpty ? nil : path
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Bool.Type: return "true or false"
        case is Int.Type, is Double.Type: return "a number"
        case is [String].Type: return "an array of strings"
        default: return "an object"
        }
    }

    /// This file's settings with `other`'s wherever `other` has one: a key `other` sets replaces
    /// this file's, and an object (`timings`, `limits`, `hibernation`) is overlaid key by key.
    /// Done on the JSON both encode to, so that a key added to the file is overlaid with no
    /// line here.
    public func overlaid(by other: ConfigurationFile) -> ConfigurationFile {
        // Nothing to overlay (as installed, no flag sets a key): no JSON round trips at start.
        if other == ConfigurationFile() { return self }
        do {
            let merged = Self.overlay(try Self.jsonObject(self), with: try Self.jsonObject(other))
            return try Self.overlayDecoder.decode(ConfigurationFile.self, from: JSONEncoder().encode(JSONValue.object(merged)))
        } catch {
            // Strings, numbers (a flag's NaN or infinity spelled out) and objects of them
            // always encode and decode.
            preconditionFailure("cannot overlay the configuration: \(error)")
        }
    }

    /// `top`'s keys over `base`'s; objects on both sides are overlaid the same way.
    private static func overlay(_ base: [String: JSONValue], with top: [String: JSONValue]) -> [String: JSONValue] {
        base.merging(top) { below, above in
            guard let below = below.members, let above = above.members else { return above }
            return .object(overlay(below, with: above))
        }
    }

    private static func jsonObject(_ file: ConfigurationFile) throws -> [String: JSONValue] {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return try JSONDecoder().decode(JSONValue.self, from: encoder.encode(file)).members ?? [:]
    }

    private static var overlayDecoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return decoder
    }

    /// The largest `timeScale`: the one that makes the longest default duration
    /// `LifecycleTimings.longest`.
    static let largestTimeScale = LifecycleTimings.longest.seconds
        / (LifecycleTimings.durations.map { LifecycleTimings()[keyPath: $0.keyPath].seconds }.max() ?? 1)

    /// The daemon's configuration, every value checked; `file` names where a bad one came from.
    public func resolve(environment: [String: String], file: String?) throws(ConfigurationError) -> DaemonConfiguration {
        func fail(_ key: String, _ message: String) -> ConfigurationError { ConfigurationError(file: file, key: key, message) }
        guard let path = ControlSocketPath.resolve(explicit: socket, environment: environment, isRoot: geteuid() == 0) else {
            throw fail("socket", ControlSocketPath.unresolvedMessage)
        }
        guard path.hasPrefix("/"), path.utf8.count < 108 else { throw fail("socket", "must be an absolute path shorter than 108 bytes, not \(path)") }
        let scale = timeScale ?? 1
        // Checked before scaling: a Duration multiplied past its range traps (found by Tests/Fuzz).
        guard scale > 0, scale <= Self.largestTimeScale else {
            throw fail("timeScale", "must be more than 0 and at most \(Int(Self.largestTimeScale)), not \(scale)")
        }
        var lifecycle = LifecycleTimings().scaled(by: scale)
        for (name, seconds) in (timings ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let updated = lifecycle.setting(name, seconds: seconds) else {
                throw fail("timings.\(name)", LifecycleTimings.names.contains(name) ? "must be a number of seconds from 0 to \(Int(LifecycleTimings.longest.seconds)) (a year), not \(seconds)" : "unknown duration")
            }
            lifecycle = updated
        }
        var configuration = DaemonConfiguration(socketPath: path, timings: lifecycle)
        configuration.timeScale = scale
        configuration.environment = environment
        if let mode = socketMode {
            guard let value = UInt32(mode, radix: 8), value <= 0o777 else { throw fail("socketMode", "must be octal permissions such as \"0660\", not \(mode)") }
            configuration.socketMode = value
        }
        if let level = logLevel {
            guard let parsed = LogLevel(name: level) else { throw fail("logLevel", "must be error, warning, notice, info or debug, not \(level)") }
            configuration.logLevel = parsed
        }
        if let quota = socketQuota {
            guard (1...253).contains(quota) else { throw fail("socketQuota", "must be 1…253 (SCM_RIGHTS carries at most 253), not \(quota)") }
            configuration.socketQuota = quota
        }
        if let history = eventHistory {
            guard (1...1_000_000).contains(history) else { throw fail("eventHistory", "must be 1…1000000, not \(history)") }
            configuration.eventHistory = history
        }
        if let trigger = memoryPressureTrigger {
            let fields = trigger.split(separator: " ")
            guard trigger.isEmpty || (fields.count == 3 && ["some", "full"].contains(fields[0]) && UInt64(fields[1]) != nil && UInt64(fields[2]) != nil) else {
                throw fail("memoryPressureTrigger", "must be \"some|full STALL_US WINDOW_US\" or \"\", not \(trigger)")
            }
            configuration.memoryPressureTrigger = trigger.isEmpty ? nil : trigger
        }
        if let directory = appsDirectory {
            guard directory.hasPrefix("/") else { throw fail("appsDirectory", "must be an absolute path, not \(directory)") }
            configuration.appsDirectory = directory
        }
        if let directory = stateDirectory {
            guard directory.isEmpty || directory.hasPrefix("/") else { throw fail("stateDirectory", "must be an absolute path or \"\", not \(directory)") }
            configuration.stateDirectory = directory
        }
        if let suspension {
            guard let choice = SuspensionChoice(rawValue: suspension) else {
                throw fail("suspension", "must be \"auto\", \"freezer\" or \"signal\", not \(suspension)")
            }
            configuration.suspension = choice
        }
        if let directory = cgroupDirectory {
            guard directory.isEmpty || directory.hasPrefix("/") else { throw fail("cgroupDirectory", "must be an absolute path or \"\", not \(directory)") }
            configuration.cgroupDirectory = directory.isEmpty ? nil : directory
        }
        for (name, value) in (limits ?? [:]).sorted(by: { $0.key < $1.key }) {
            switch configuration.limits.setting(name, value) {
            case .success(let updated): configuration.limits = updated
            case .failure(let error): throw fail("limits.\(name)", error.message)
            }
        }
        if configuration.limits.totalQueueBytes < configuration.limits.clientQueueBytes {
            throw fail("limits.totalQueueBytes", "must be at least limits.clientQueueBytes (\(configuration.limits.clientQueueBytes))")
        }
        if let bytes = reclaimQueuedBytes {
            guard (0...(1 << 30)).contains(bytes) else { throw fail("reclaimQueuedBytes", "must be 0…1073741824 (0: never), not \(bytes)") }
            configuration.reclaimQueuedBytes = bytes == 0 ? nil : bytes
        }
        if let hibernation {
            switch hibernation.resolve() {
            case .success(let settings): configuration.hibernation = settings
            case .failure(let error): throw fail("hibernation.\(error.key)", error.message)
            }
        }
        if let transfers {
            switch transfers.resolve() {
            case .success(let settings): configuration.transfers = settings
            case .failure(let error): throw fail("transfers.\(error.key)", error.message)
            }
        }
        return configuration
    }
}

/// Any JSON value, read and written with Codable: what Foundation's JSONSerialization gives,
/// which is not in FoundationEssentials (voipd links that instead of Foundation to start
/// faster, docs/BENCHMARKS.md). Numbers are Doubles: the configuration's are far below 2^53.
enum JSONValue: Codable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: Decoder) throws {
        let value = try decoder.singleValueContainer()
        if value.decodeNil() {
            self = .null
        } else if let bool = try? value.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? value.decode(Double.self) {
            self = .number(number)
        } else if let string = try? value.decode(String.self) {
            self = .string(string)
        } else if let array = try? value.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try value.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: Encoder) throws {
        var value = encoder.singleValueContainer()
        switch self {
        case .object(let members): try value.encode(members)
        case .array(let elements): try value.encode(elements)
        case .string(let string): try value.encode(string)
        case .number(let number): try value.encode(number)
        case .bool(let bool): try value.encode(bool)
        case .null: try value.encodeNil()
        }
    }

    /// An object's members; nil for anything else.
    var members: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }
}

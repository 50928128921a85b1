/// Where the device's power comes from (`/sys/class/power_supply`, or `voipctl power`).
public enum PowerSource: String, Codable, Hashable, Sendable, CaseIterable {
    case externalPower
    case battery
    /// Not known (no power supply reported): treated as external power, as on a server.
    case unknown
}

/// The kind of network the traffic goes over; each has its own daily budget (seed 003:
/// "networking (WWAN and Wi-Fi, independently)").
public struct NetworkKind: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let wifi = NetworkKind("wifi")
    public static let ethernet = NetworkKind("ethernet")
    public static let cellular = NetworkKind("cellular")
    public static let other = NetworkKind("other")

    public var description: String { rawValue }
}

/// The network as voipd knows it.
public struct NetworkStatus: Codable, Hashable, Sendable {
    /// Whether the system has a network: a route to the Internet, or a local network
    /// (voipd's `SystemNetwork`); without one nothing starts (URLSession waits for
    /// connectivity).
    public var isAvailable: Bool
    public var kind: NetworkKind
    /// Metered or slow: cellular, a phone's hotspot (`voipctl network --expensive`).
    public var isExpensive: Bool

    public init(isAvailable: Bool = true, kind: NetworkKind = .other, isExpensive: Bool = false) {
        self.isAvailable = isAvailable
        self.kind = kind
        self.isExpensive = isExpensive
    }
}

/// Everything outside the tasks that decides whether they may run.
public struct TransferConditions: Codable, Hashable, Sendable {
    public var power: PowerSource
    public var network: NetworkStatus

    public init(power: PowerSource = .unknown, network: NetworkStatus = NetworkStatus()) {
        self.power = power
        self.network = network
    }
}

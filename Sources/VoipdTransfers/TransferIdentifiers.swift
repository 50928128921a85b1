/// A background task's number: unique among every session of every app, never reused.
public struct TransferTaskID: RawRepresentable, Hashable, Comparable, Codable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "\(rawValue)" }
}

/// A background session: an app's name and the identifier it gave the session (an app may
/// have several, as with `URLSessionConfiguration.background(withIdentifier:)`).
public struct TransferSessionID: Hashable, Codable, Sendable, Comparable, CustomStringConvertible {
    public var app: String
    public var identifier: String

    public init(app: String, identifier: String) {
        self.app = app
        self.identifier = identifier
    }

    public static func < (a: Self, b: Self) -> Bool { (a.app, a.identifier) < (b.app, b.identifier) }
    public var description: String { "\(app)/\(identifier)" }
}

/// One batch of events handed to an app; the app says when it has handled it (the
/// completion handler of `handleEventsForBackgroundURLSession`).
public struct DeliveryID: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "\(rawValue)" }
}

/// `reply` (type 128): the answer to the request with the same `id`. Either `ok` with a
/// `result`, or not `ok` with an `error`. A framing error that cannot be tied to a request
/// is answered with id 0.
///
/// A list that does not fit in one frame (`status`, `sockets`, `events`) comes in several
/// replies with the same id: every one but the last has `"more": true`, and the client
/// concatenates their lists.
public struct Reply<Result: Codable & Sendable>: Codable, Sendable {
    public var id: UInt64
    public var ok: Bool
    public var result: Result?
    public var error: ProtocolError?
    /// More replies to this request follow.
    public var more: Bool?

    public init(id: UInt64, result: Result, more: Bool = false) {
        self.id = id
        self.ok = true
        self.result = result
        self.error = nil
        self.more = more ? true : nil
    }

    public init(id: UInt64, error: ProtocolError) {
        self.id = id
        self.ok = false
        self.result = nil
        self.error = error
    }

    /// Every field as read.
    @usableFromInline
    init(id: UInt64, ok: Bool, result: Result?, error: ProtocolError?, more: Bool?) {
        self.id = id
        self.ok = ok
        self.result = result
        self.error = error
        self.more = more
    }
}

/// The request id alone, read before the body's type is known.
public struct RequestID: Codable, Sendable {
    public var id: UInt64?
}

/// A result whose list may be split over several replies.
public protocol ListResult: Codable, Sendable {
    associatedtype Item: Codable & Sendable
    var items: [Item] { get set }
    init(items: [Item])
}

extension StatusResult: ListResult {
    public var items: [AppStatus] {
        get { apps }
        set { apps = newValue }
    }
    public init(items: [AppStatus]) { self.init(apps: items) }
}

extension SocketsResult: ListResult {
    public var items: [HeldSocketStatus] {
        get { sockets }
        set { sockets = newValue }
    }
    public init(items: [HeldSocketStatus]) { self.init(sockets: items) }
}

extension EventsResult: ListResult {
    public var items: [TransitionRecord] {
        get { transitions }
        set { transitions = newValue }
    }
    public init(items: [TransitionRecord]) { self.init(transitions: items) }
}

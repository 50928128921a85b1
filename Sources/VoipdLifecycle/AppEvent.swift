import VoipdVocabulary

/// One lifecycle event sent to an app: its sequence number (echoed in the acknowledgement),
/// its kind and what goes with it.
public struct AppEvent: Equatable, Sendable, Codable {
    public var id: UInt64
    public var kind: AppEventKind
    /// For ``AppEventKind/voipSocketReadable``.
    public var socket: SocketReadiness?
    /// For ``AppEventKind/backgroundTransferEvents``: the transfer delivery it carries.
    public var delivery: UInt64?
    /// Why this event was sent, in words, for the event log.
    public var reason: String

    public init(id: UInt64, kind: AppEventKind, socket: SocketReadiness? = nil, delivery: UInt64? = nil, reason: String = "") {
        self.id = id
        self.kind = kind
        self.socket = socket
        self.delivery = delivery
        self.reason = reason
    }
}

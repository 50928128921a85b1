/// The states an app can be in, as iOS named them. These names are part of the wire
/// protocol and of `voipctl status --json`; scripts rely on them.
public enum AppState: String, Codable, Sendable, CaseIterable {
    /// Never launched, or known only by the sockets held for it.
    case notRunning
    /// In the foreground and receiving events.
    case active
    /// In the foreground but not receiving events: an interruption (an incoming-call alert),
    /// or on the way between foreground and background.
    case inactive
    /// Running in the background; the clock is ticking.
    case background
    /// Stopped: no code runs. The kernel reports state `T`.
    case suspended
    /// The process ended; ``TerminationReason`` says why.
    case terminated
}

/// The lifecycle events an app receives, under UIKit's names. Each is acknowledged.
public enum AppEventKind: String, Codable, Sendable, CaseIterable {
    case willResignActive
    case didEnterBackground
    case willEnterForeground
    case didBecomeActive
    case willTerminate
    case voipSocketReadable
    case keepAlive
    case backgroundTaskWillExpire
    /// Background transfers ended or were challenged (`handleEventsForBackgroundURLSession`):
    /// the event carries them; acknowledging it says they are handled.
    case backgroundTransferEvents
}

/// Why a held VoIP socket woke its app: what the kernel reported, read without consuming.
public struct SocketReadiness: Equatable, Sendable, Codable {
    /// The name the app registered the socket under.
    public var name: String
    /// Bytes waiting to be read (`FIONREAD`).
    public var bytesAvailable: Int
    /// The peer closed its end (EPOLLRDHUP or EPOLLHUP).
    public var peerClosed: Bool
    /// For a listening socket, the connections waiting to be accepted (its `bytesAvailable`
    /// is 0); nil for any other socket.
    public var connectionsWaiting: Int?

    public init(name: String, bytesAvailable: Int, peerClosed: Bool, connectionsWaiting: Int? = nil) {
        self.name = name
        self.bytesAvailable = bytesAvailable
        self.peerClosed = peerClosed
        self.connectionsWaiting = connectionsWaiting
    }

    /// What came, in words: "data on sip", "a connection on sip-listener".
    public var arrival: String { connectionsWaiting == nil ? "data on \(name)" : "a connection on \(name)" }
}

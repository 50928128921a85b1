/// What a user agent state machine asks its driver to do.
///
/// The state machines perform no I/O. Whoever drives one sends the messages (through a
/// ``SIPUserAgentStack``, which adds the transaction layer), arms and cancels the timers
/// (and calls `timerFired` when one fires), and logs the lines.
public enum SIPAction<Timer: Hashable & Sendable, Event: Sendable>: Sendable {
    /// Write this message to the connection.
    case send(SIPMessage)
    /// Arm `timer` to fire once after the delay, replacing it if it is already armed.
    case startTimer(Timer, after: Duration)
    /// Disarm `timer` if it is armed.
    case cancelTimer(Timer)
    /// Something the application may want to know (registered, call established, …).
    case report(Event)
    /// A line for a human reading the log.
    case log(String)
}

/// A SIP user agent written as a pure state machine: messages and timer firings in,
/// ``SIPAction``s out.
public protocol SIPUserAgent {
    associatedtype Timer: Hashable & Sendable
    associatedtype Event: Sendable

    /// Handles a message received on the user agent's connection.
    mutating func receive(_ message: SIPMessage) -> [SIPAction<Timer, Event>]

    /// Handles a timer that an earlier ``SIPAction/startTimer(_:after:)`` armed.
    mutating func timerFired(_ timer: Timer) -> [SIPAction<Timer, Event>]

    /// Handles the loss of the connection: every transaction and dialog on it is gone.
    mutating func connectionLost() -> [SIPAction<Timer, Event>]

    /// Handles a final response to INVITE this agent sent that no ACK acknowledged in time
    /// (the transaction layer's timer H or L).
    mutating func responseUnacknowledged(_ response: SIPMessage) -> [SIPAction<Timer, Event>]
}

extension SIPUserAgent {
    /// Nothing to do by default.
    public mutating func responseUnacknowledged(_ response: SIPMessage) -> [SIPAction<Timer, Event>] { [] }
}

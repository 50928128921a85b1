import VoipdVocabulary

/// What the lifecycle answers to one input: the reply to whoever asked, and the actions
/// the daemon must perform, in order.
public struct LifecycleOutcome: Equatable, Sendable {
    public var reply: LifecycleReply
    public var actions: [LifecycleAction]

    public init(reply: LifecycleReply = .accepted, actions: [LifecycleAction] = []) {
        self.reply = reply
        self.actions = actions
    }
}

/// The answer to an input, for a request's reply. A refusal changes nothing.
public enum LifecycleReply: Equatable, Sendable {
    case accepted
    /// The input was refused, with the reason.
    case rejected(String)
    /// beginBackgroundTask's answer: the task's id, or 0 (invalid) when refused.
    case backgroundTaskBegan(id: UInt64)
}

extension AppLifecycle {
    /// One input being handled: the time it was given and what it produces so far. Not
    /// part of the lifecycle's state.
    struct Turn {
        let now: MonotonicInstant
        var outcome = LifecycleOutcome()

        init(now: MonotonicInstant) {
            self.now = now
            // A wake or a stop takes about ten actions: one allocation instead of growing four times.
            outcome.actions.reserveCapacity(16)
        }

        mutating func emit(_ action: LifecycleAction) { outcome.actions.append(action) }

        mutating func reply(_ reply: LifecycleReply) { outcome.reply = reply }

        mutating func reject(_ reason: String) { outcome.reply = .rejected(reason) }
    }
}

import VoipdLifecycle
import VoipdVocabulary

/// The part of a wake's answer that waits until voipd has blocked once.
///
/// On one CPU the woken app runs only when voipd blocks again, so whatever voipd does
/// between the `SIGCONT` (or thaw) and its next `epoll_wait` delays the app. Of the
/// lifecycle's answer to a wake, the app needs the resume, the marks of its sockets and the
/// event on its connection; the rest is voipd's own bookkeeping (timers, the transition's
/// record, its followers and state file, the watches a suspension had), which touches
/// neither the process nor its sockets. That part is performed at the start of the loop's
/// next turn — when the app's acknowledgement (or anything else) wakes voipd, or after
/// ``WakeBookkeeping/longestWait`` — and before any other input or request is handled, so
/// every app's actions are still performed in the order its lifecycle gave them.
struct WakeBookkeeping {
    let app: AppID
    /// The whole answer; the actions performed before blocking are skipped when it is settled.
    let actions: [LifecycleAction]
    /// When the process was continued (the transition out of `suspended` is stamped then).
    let continuedAt: Double
    /// The lifecycle's `now` for this answer: its timers count from it, not from the settling.
    let decidedAt: MonotonicInstant

    /// How long voipd blocks at most while bookkeeping waits: a program that says nothing
    /// after its wake (an adopted one is sent no event) has its records, and its followers
    /// the transition, that much later. Long enough to be out of the way of the first
    /// milliseconds the woken app needs the CPU for (an INVITE to answer).
    static let longestWait: Duration = .milliseconds(10)

    /// Whether the answer to a wake can be split: every action is one the app needs before
    /// voipd blocks, or bookkeeping. Anything else (a kill, a launch, a stop…) and the
    /// whole answer is performed at once, in order, as any other answer.
    static func canDefer(_ actions: [LifecycleAction]) -> Bool {
        actions.withUnsafeBufferPointer { buffer in
            buffer.indices.allSatisfy { isBookkeeping(buffer[$0]) || isNeededByTheApp(buffer[$0]) }
        }
    }

    /// Which actions of an answer ``Daemon`` performs in one go.
    enum Part {
        /// Every action: any answer but a wake's.
        case all
        /// A wake's, before voipd blocks (``isNeededByTheApp(_:)``).
        case neededByTheApp
        /// A wake's, at the loop's next turn (``isBookkeeping(_:)``).
        case bookkeeping

        func includes(_ action: LifecycleAction) -> Bool {
            switch self {
            case .all: true
            case .neededByTheApp: isNeededByTheApp(action)
            case .bookkeeping: isBookkeeping(action)
            }
        }
    }

    /// Done before voipd blocks: the app is told (its sockets' marks taken first, as the
    /// event is on its way) and no other socket of it wakes it again.
    static func isNeededByTheApp(_ action: LifecycleAction) -> Bool {
        switch action {
        case .deliver, .markSockets, .markReported, .disarmSockets: true
        default: false
        }
    }

    /// Done at the next turn: the resume itself is done already on the wake path (what is
    /// left of it is the end of a hibernation's record), timers are only voipd's, and the
    /// transition is recorded with the time of the continue.
    static func isBookkeeping(_ action: LifecycleAction) -> Bool {
        switch action {
        case .resume, .startTimer, .cancelTimer, .transition: true
        default: false
        }
    }
}

import VoipdLifecycle
import VoipdVocabulary

/// The part of a ``LifecycleAction`` or ``LifecycleReply`` that a test compares: what is done
/// and to what, without the words (reasons, details), without timer cancellations (the
/// lifecycle cancels generously, and a cancelled timer that was not set changes nothing) and
/// without the socket marks that come with every event (an invariant checks those).
enum Step: Equatable, Sendable, CustomStringConvertible {
    case deliver(AppEventKind)
    case suspend
    case resume
    case arm
    case disarm
    case start(LifecycleTimer)
    case kill(TerminationReason.Code)
    case requestExit
    case launch(inBackground: Bool)
    case reclaim
    case hibernate
    case transition(AppState, AppState)
    /// The reply: beginBackgroundTask answered with a valid id.
    case taskBegan
    /// The reply: beginBackgroundTask answered with id 0.
    case taskRefused
    /// The reply: refused.
    case rejected

    init?(_ action: LifecycleAction) {
        switch action {
        case .deliver(let event): self = .deliver(event.kind)
        case .suspend: self = .suspend
        case .resume: self = .resume
        case .markSockets, .markReported: return nil
        case .armSockets: self = .arm
        case .disarmSockets: self = .disarm
        case .startTimer(let timer, _): self = .start(timer)
        case .cancelTimer: return nil
        case .kill(let reason): self = .kill(reason.code)
        case .requestExit: self = .requestExit
        case .launch(let inBackground, _): self = .launch(inBackground: inBackground)
        case .reclaimSockets: self = .reclaim
        case .hibernate: self = .hibernate
        case .transition(let from, let to, _): self = .transition(from, to)
        }
    }

    /// The reply as a step; nil for a plain acceptance.
    init?(_ reply: LifecycleReply) {
        switch reply {
        case .accepted: return nil
        case .backgroundTaskBegan(let id): self = id == 0 ? .taskRefused : .taskBegan
        case .rejected: self = .rejected
        }
    }

    var isDelivery: Bool { if case .deliver = self { return true } else { return false } }
    var isKill: Bool { if case .kill = self { return true } else { return false } }
    var isLaunch: Bool { if case .launch = self { return true } else { return false } }
    /// Whether the step acts on the process itself (which must exist).
    var reachesProcess: Bool { isDelivery || isKill || [.suspend, .resume, .requestExit].contains(self) }

    var description: String {
        switch self {
        case .deliver(let kind): return "deliver(\(kind.rawValue))"
        case .start(let timer): return "start(\(timer.rawValue))"
        case .kill(let code): return "kill(\(code.rawValue))"
        case .launch(let inBackground): return "launch(\(inBackground ? "background" : "foreground"))"
        case .transition(let from, let to): return "\(from.rawValue)→\(to.rawValue)"
        case .suspend: return "suspend"
        case .resume: return "resume"
        case .arm: return "arm"
        case .disarm: return "disarm"
        case .requestExit: return "requestExit"
        case .reclaim: return "reclaim"
        case .hibernate: return "hibernate"
        case .taskBegan: return "taskBegan"
        case .taskRefused: return "taskRefused"
        case .rejected: return "rejected"
        }
    }
}

extension Array where Element == LifecycleAction {
    /// The batch without timer cancellations and words.
    var steps: [Step] { compactMap(Step.init) }

    /// The events sent to the app, in order.
    var delivered: [AppEvent] {
        compactMap { if case .deliver(let event) = $0 { return event } else { return nil } }
    }

    var deliveredKinds: [AppEventKind] { delivered.map(\.kind) }

    /// The delay of the last `startTimer` of `timer` in the batch.
    func startDelay(of timer: LifecycleTimer) -> Duration? {
        compactMap { action -> Duration? in
            if case .startTimer(timer, let after) = action { return after } else { return nil }
        }.last
    }

    func cancels(_ timer: LifecycleTimer) -> Bool { contains(.cancelTimer(timer)) }

    /// The reason code of the kill in the batch.
    var killCode: TerminationReason.Code? {
        compactMap { if case .kill(let reason) = $0 { return reason.code } else { return nil } }.first
    }
}

extension LifecycleOutcome {
    /// The reply (unless a plain acceptance), then the actions, without timer cancellations
    /// and words.
    var steps: [Step] { (Step(reply).map { [$0] } ?? []) + actions.steps }

    var delivered: [AppEvent] { actions.delivered }

    var deliveredKinds: [AppEventKind] { actions.deliveredKinds }

    func startDelay(of timer: LifecycleTimer) -> Duration? { actions.startDelay(of: timer) }

    func cancels(_ timer: LifecycleTimer) -> Bool { actions.cancels(timer) }

    var killCode: TerminationReason.Code? { actions.killCode }

    /// The id answered to beginBackgroundTask (0 when refused).
    var backgroundTaskID: UInt64? {
        if case .backgroundTaskBegan(let id) = reply { return id } else { return nil }
    }

    var isRejected: Bool { if case .rejected = reply { return true } else { return false } }
}

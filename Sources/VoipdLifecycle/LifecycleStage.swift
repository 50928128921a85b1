import VoipdVocabulary

/// The lifecycle's state, by phase: what only one phase has lives in that phase's case, so
/// that no combination the lifecycle cannot be in can be written (an event in flight without
/// a connection, a task budget while suspended, an interruption of an app going to the
/// background, a kill pending for a process that is gone).
extension AppLifecycle {
    enum Stage: Sendable, Codable {
        /// Never started (or known only by the sockets held for it).
        case notRunning(Dormant)
        /// A process exists.
        case running(Running)
        /// The process ended. `endedByChoice`: it was ended on purpose (force quit,
        /// terminate, exits-on-suspend), so data does not bring it back until it is launched
        /// again; a crash, the watchdog or memory pressure do not count (a VoIP app is
        /// relaunched after those, as iOS did).
        case terminated(Dormant, endedByChoice: Bool)
    }

    /// An app with no process.
    struct Dormant: Sendable, Codable {
        /// Events for the next process: the readiness of held sockets that asked for a relaunch.
        var outbox: [AppEvent] = []
        /// A relaunch waits for the throttle timer.
        var relaunchScheduled = false
    }

    /// An app whose process exists. Its fields live in one shared box, copied only when a
    /// shared value is changed: the stage enum then moves and copies a reference, not the
    /// fields one by one (the wake path reads and changes them several times per input).
    @dynamicMemberLookup
    struct Running: Sendable, Codable {
        struct Fields: Sendable, Codable {
            var phase: RunningPhase
            var goal: Goal
            var link: Link
            /// Events waiting to be sent, in order.
            var outbox: [AppEvent]
            /// Open background tasks by id, with their names.
            var openTasks: [UInt64: String] = [:]
            var keepAliveInterval: Duration?
            /// In a call (the audio session is active) since then: not suspended, no budget runs.
            var callStartedAt: MonotonicInstant?
            /// The process is being ended, and why (decided when the kill or willTerminate is).
            var ending: Ending?
            /// The daemon is stopping: the app is no longer walked toward its goal (which could stop it).
            var shuttingDown = false
        }

        private final class Box: @unchecked Sendable {
            @exclusivity(unchecked) var fields: Fields
            init(_ fields: Fields) { self.fields = fields }
        }

        private var box: Box

        init(phase: RunningPhase, goal: Goal, link: Link, outbox: [AppEvent]) {
            box = Box(Fields(phase: phase, goal: goal, link: link, outbox: outbox))
        }

        @inline(__always)
        subscript<Value>(dynamicMember path: WritableKeyPath<Fields, Value>) -> Value {
            _read { yield box.fields[keyPath: path] }
            _modify {
                if !isKnownUniquelyReferenced(&box) { box = Box(box.fields) }
                yield &box.fields[keyPath: path]
            }
        }

        init(from decoder: any Decoder) throws { box = Box(try Fields(from: decoder)) }

        func encode(to encoder: any Encoder) throws { try box.fields.encode(to: encoder) }
    }

    enum RunningPhase: Sendable, Codable, Equatable {
        case active
        case inactive
        /// `taskBudgetDeadline`: when the background-task budget runs out (nil: no budget
        /// running). `wakeUnhandled`: a wake (data, keep-alive, relaunch) whose budget is
        /// running and that the app has not acknowledged: an app that cannot acknowledge keeps
        /// the whole budget to do its work.
        case background(taskBudgetDeadline: MonotonicInstant?, wakeUnhandled: Bool)
        /// A stop the kernel has not confirmed yet, and why it was decided (for the
        /// transition once it is).
        case suspending(reason: String)
        case suspended

        var phase: LifecyclePhase {
            switch self {
            case .active: return .active
            case .inactive: return .inactive
            case .background: return .background
            case .suspending: return .suspending
            case .suspended: return .suspended
            }
        }

        /// The wake's budget is over or the app handled it.
        mutating func wakeHandled() {
            if case .background(let deadline, true) = self { self = .background(taskBudgetDeadline: deadline, wakeUnhandled: false) }
        }
    }

    /// Where the app wants to be.
    enum Goal: Sendable, Codable, Equatable {
        /// `interrupted`: an interruption (an incoming-call alert) holds it inactive.
        case foreground(interrupted: Bool)
        case background
    }

    /// Whether events can reach the app.
    enum Link: Sendable, Codable, Equatable {
        /// Events are sent and acknowledged; `inFlight` is the one sent and not yet acknowledged.
        case connected(inFlight: AppEvent?)
        /// Launched and expected to connect: events wait for it.
        case awaiting
        /// Events cannot be delivered and count as acknowledged at once.
        case none

        var inFlight: AppEvent? {
            if case .connected(let event) = self { return event }
            return nil
        }
    }

    enum Ending: Sendable, Codable, Equatable {
        /// willTerminate is on its way, or SIGTERM was sent.
        case requested(TerminationReason)
        /// SIGKILL was sent (once; the first kill's reason is the one recorded).
        case killed(TerminationReason)

        var reason: TerminationReason {
            switch self {
            case .requested(let reason), .killed(let reason): return reason
            }
        }
    }

    /// What happened to the app so far, across its processes.
    struct History: Sendable, Codable {
        /// Times a process was started (first launch included).
        var launchCount = 0
        /// voipSocketReadable and keepAlive events delivered.
        var wakeCount = 0
        /// Deaths in a row of a process that ran less than `relaunchThrottle`.
        var quickDeaths = 0
        /// When the last process was started.
        var lastLaunch: MonotonicInstant?
        /// Why the last process ended.
        var lastTermination: TerminationReason?
    }
}

import VoipdLifecycle
import VoipdVocabulary

/// What must hold for every batch of actions, whatever the state and the input. The
/// ``Driver`` checks these after every input it feeds, so every test checks them too.
struct Invariants {
    /// What a daemon performing the actions would know, carried from batch to batch.
    struct Memory {
        /// The held sockets are watched (the last of arm/disarm was arm).
        var socketsArmed = false
        /// A kill was sent to the current process.
        var killSent = false
        /// The daemon was told it is stopping.
        var shutDown = false
        var lastEventID: UInt64 = 0
    }

    /// The violations of one batch: `outcome` answered `input` and took the lifecycle from
    /// `before` to `after`.
    static func violations(before: AppLifecycle, input: LifecycleInput, outcome: LifecycleOutcome,
                           after: AppLifecycle, memory: Memory) -> [String] {
        var found: [String] = []
        func check(_ condition: Bool, _ message: @autoclosure () -> String) {
            if !condition { found.append(message()) }
        }
        let actions = outcome.actions
        let steps = outcome.steps
        let delivered = actions.delivered

        // At most one event in flight.
        check(delivered.count <= 1, "more than one event delivered in one batch: \(steps)")
        if !delivered.isEmpty, let pending = before.inFlight {
            check(input == .acknowledged(eventID: pending.id),
                  "\(delivered[0].kind) delivered while \(pending.kind) was still in flight")
        }
        if let last = delivered.last { check(after.inFlight == last, "the delivered event is not the one in flight") }
        if after.connection != .connected { check(after.inFlight == nil, "an event is in flight without a connection") }
        for event in delivered {
            check(event.id > memory.lastEventID, "event ids must increase: \(event.id) after \(memory.lastEventID)")
        }

        // No lost wake-up: the sockets are watched before the stop.
        for (index, action) in actions.enumerated() where action == .suspend {
            let lastSocketAction = actions[..<index].last { $0 == .armSockets || $0 == .disarmSockets || $0 == .resume }
            check(lastSocketAction == .armSockets, "suspend not preceded by armSockets: \(steps)")
        }
        check(steps.filter { $0 == .suspend }.count <= 1, "more than one suspend in a batch: \(steps)")
        // Nor between the app's last event and the stop: every event goes out right after a
        // mark of the sockets, and a confirmed stop looks at them again.
        for (index, action) in actions.enumerated() {
            guard case .deliver(let event) = action else { continue }
            check(index > 0 && actions[index - 1] == .markSockets, "\(event.kind) delivered without a mark just before it: \(actions)")
        }
        // A socket counts as told only when an event about it goes out: a readiness passed
        // over (the app runs already) is not marked, or what waits on it would never wake
        // the app again.
        for (index, action) in actions.enumerated() {
            guard case .deliver(let event) = action, let socket = event.socket else { continue }
            check(actions[..<index].contains(.markReported(socket)), "\(event.kind) about \(socket.name) delivered without marking it told: \(actions)")
        }
        if case .socketReady = input, before.phase.isAlive, !before.phase.isStopped {
            check(!actions.contains { if case .markReported = $0 { true } else { false } },
                  "a readiness passed over, marked as told: \(actions)")
        }
        if input == .stopConfirmed, before.phase == .suspending, after.phase == .suspended {
            check(actions.contains(.armSockets), "a confirmed stop without a look at the sockets: \(steps)")
        }

        // Stop and continue alternate, starting from the state before (a process taken back
        // suspended was found stopped: it starts so).
        let takenBack = if case .takenBackSuspended = input, !before.phase.isAlive { true } else { false }
        var stopped = before.phase.isStopped || takenBack
        for step in steps {
            if step == .resume { check(stopped, "resume of a running app: \(steps)"); stopped = false }
            if step == .suspend { check(!stopped, "suspend of a stopped app: \(steps)"); stopped = true }
        }
        if after.phase.isAlive { check(stopped == after.phase.isStopped, "phase \(after.phase) after \(steps)") }

        // The transition records chain from the state before to the state after.
        var state = before.state
        for case .transition(let from, let to) in steps {
            check(from == state, "transition from \(from) but the state was \(state)")
            check(from != to, "transition from \(from) to itself")
            state = to
        }
        check(state == after.state, "the transitions end at \(state) but the state is \(after.state)")

        // Nothing reaches a process after its kill, nor a process that does not exist.
        if let killIndex = steps.firstIndex(where: \.isKill) {
            check(!steps[(killIndex + 1)...].contains { $0.isDelivery || $0 == .suspend }, "event or stop after the kill: \(steps)")
            check(!memory.killSent, "a second kill for the same process: \(steps)")
        }
        if memory.killSent && before.phase.isAlive {
            check(delivered.isEmpty && !steps.contains(.suspend), "event or stop after the kill was sent: \(steps)")
        }
        if before.phase.isAlive {
            check(!steps.contains(where: \.isLaunch), "launch of a running app: \(steps)")
        } else {
            check(!steps.contains(where: \.reachesProcess), "an action for a process that does not exist: \(steps)")
        }

        // A stopped app cannot answer: nothing waits on it, and it never holds back the foreground.
        if after.phase.isStopped {
            check(after.inFlight == nil, "\(after.inFlight?.kind.rawValue ?? "") in flight to a stopped app")
            check(after.outbox.isEmpty, "events queued for a stopped app: \(after.outbox.map(\.kind))")
            check(after.goal == .background || after.pendingTermination != nil, "a stopped app that should be in the foreground")
        }

        // An app runs with its sockets its own, and is stopped with them watched.
        var armed = memory.socketsArmed
        for step in steps where step == .arm || step == .disarm { armed = step == .arm }
        if after.phase.isAlive && !memory.shutDown && input != .shutdown {
            check(armed == after.phase.isStopped, "sockets \(armed ? "armed" : "disarmed") while \(after.phase): \(steps)")
        }

        // A refusal changes nothing.
        if outcome.isRejected {
            check(actions.isEmpty, "a rejection with actions: \(steps)")
            check(before.phase == after.phase && before.goal == after.goal, "a rejection changed the state")
        }
        for case .startTimer(let timer, let after) in actions {
            check(after >= .zero, "\(timer) started with a negative delay")
        }
        return found
    }

    /// The memory after a batch.
    static func remember(_ memory: Memory, input: LifecycleInput, actions: [LifecycleAction],
                         after: AppLifecycle) -> Memory {
        var next = memory
        for action in actions {
            switch action {
            case .armSockets: next.socketsArmed = true
            case .disarmSockets: next.socketsArmed = false
            case .kill: next.killSent = true
            case .deliver(let event): next.lastEventID = event.id
            default: break
            }
        }
        if !after.phase.isAlive { next.killSent = false }
        if input == .shutdown { next.shutDown = true }
        return next
    }
}

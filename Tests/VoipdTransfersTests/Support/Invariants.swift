import Foundation
import VoipdTransfers

/// What must hold after every step, whatever the input.
enum Invariants {
    static func violations(of engine: TransferEngine, at now: Date, step: TransferStep) -> [String] {
        var found: [String] = []
        let configuration = engine.configuration
        let running = engine.tasks.values.filter { $0.runningAttempt != nil }
        if running.count > configuration.maximumConcurrentTransfers {
            found.append("\(running.count) attempts run, more than \(configuration.maximumConcurrentTransfers)")
        }
        let perHost = Dictionary(grouping: running, by: \.host).mapValues(\.count)
        for (host, count) in perHost where count > configuration.maximumConcurrentTransfersPerHost {
            found.append("\(count) attempts run to \(host)")
        }
        // Work-conserving: a ready task waits only for a slot that is really taken.
        for task in engine.tasks.values {
            guard engine.waitReason(of: task.id, at: now) == .queued else { continue }
            if running.count < configuration.maximumConcurrentTransfers && perHost[task.host, default: 0] < configuration.maximumConcurrentTransfersPerHost {
                found.append("task \(task.id) is ready and a slot is free, yet it waits")
            }
        }
        if let deadline = engine.nextDeadline, deadline <= now {
            found.append("the next deadline \(deadline) is not in the future")
        }
        for task in engine.tasks.values where !task.isFinished && task.deadline <= now {
            found.append("task \(task.id) outlived its resource timeout")
        }
        // Events for a running app are never held back.
        for task in engine.tasks.values {
            if case .pending? = task.deliveryState, engine.app(task.session.app).presence.isRunning {
                found.append("task \(task.id)'s event waits though its app runs")
            }
        }
        // Records first: a record is durable before what it describes is seen outside.
        let isRecord: (TransferAction) -> Bool = { action in
            switch action {
            case .saveTask, .forgetTask, .saveState: return true
            default: return false
            }
        }
        if let firstEffect = step.actions.firstIndex(where: { !isRecord($0) }), step.actions[firstEffect...].contains(where: isRecord) {
            found.append("a record is written after an effect: \(step.actions)")
        }
        // Every task a step touched is saved or forgotten in that step.
        for action in step.actions {
            if case .start(_, let order) = action, !step.savedTasks.contains(order.task) {
                found.append("task \(order.task) started without its record being saved")
            }
        }
        return found
    }
}

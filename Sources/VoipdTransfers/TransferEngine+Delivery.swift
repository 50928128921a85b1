import FoundationEssentials

extension TransferEngine {
    /// The tasks whose events wait for delivery to `app`, oldest first.
    private func pendingEvents(of app: String) -> [(task: TransferTask, since: Date)] {
        tasks.values.compactMap { task -> (TransferTask, Date)? in
            guard task.session.app == app, case .pending(let since) = task.deliveryState else { return nil }
            return (task, since)
        }.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0.id < $1.0.id }
    }

    /// When the pending events of `app` are to be delivered: at once to a running app;
    /// to a suspended or ended one once the coalescing window has passed and, under
    /// ``ResumeLimiterPlacement/delayResumes``, the work period since the last wake. nil
    /// when nothing is pending or the app cannot be reached.
    func deliveryDue(for name: String) -> Date? {
        let pending = pendingEvents(of: name)
        guard let first = pending.first else { return nil }
        let app = self.app(name)
        if app.presence.isRunning { return first.since }
        if app.unreachable { return nil }
        let curve = configuration.resumeLimiter
        let coalesced = first.since.addingTimeInterval(curve.coalescingWindow)
        switch curve.placement {
        case .delayResumes:
            return max(coalesced, app.limiter.earliestResume(curve: curve) ?? coalesced)
        case .delayNewTasks:
            // Seed 003, iOS 8: "its authentication challenge causes the app to resume
            // immediately".
            let challenged = pending.contains { if case .challenged = $0.task.phase { return true } else { return false } }
            return challenged ? first.since : coalesced
        }
    }

    mutating func deliverDueEvents() {
        for name in state.apps.keys.sorted() {
            guard let due = deliveryDue(for: name), due <= now else { continue }
            deliver(to: name)
        }
    }

    private mutating func deliver(to name: String) {
        var app = self.app(name)
        let wake: TransferWake
        switch app.presence {
        case .foreground, .background: wake = .none
        case .suspended: wake = .resume
        case .notRunning: wake = .relaunch
        }
        let id = DeliveryID(rawValue: state.nextDeliveryID)
        state.nextDeliveryID += 1
        var events: [TransferEvent] = []
        for (task, _) in pendingEvents(of: name).prefix(configuration.maximumEventsPerDelivery) {
            switch task.phase {
            case .finished(let completion, _):
                tasks[task.id]?.phase = .finished(completion, .sent(id))
                events.append(TransferEvent(task: task.id, session: task.session.identifier, kind: .completed(completion)))
            case .challenged(let challenge, _):
                tasks[task.id]?.phase = .challenged(challenge, .sent(id))
                events.append(TransferEvent(task: task.id, session: task.session.identifier, kind: .challenge(challenge)))
            case .waiting, .running:
                continue
            }
            changedTasks.insert(task.id)
        }
        if wake != .none {
            // Seed 003: nsurlsessiond "still doubles that work period every time it resumes
            // (or relaunches) your app"; challenges too ("these resumes /do/ count against
            // the resume rate limiter").
            app.limiter.recordResume(at: now, curve: configuration.resumeLimiter)
            app.wokenForEvents = true
            if wake == .resume { statistics.resumes += 1 } else { statistics.relaunches += 1 }
        }
        state.apps[name] = app
        stateChanged = true
        actions.append(.deliver(TransferDelivery(id: id, app: name, events: events, wake: wake)))
    }
}

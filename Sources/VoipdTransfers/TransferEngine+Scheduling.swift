import FoundationEssentials

extension TransferEngine {
    /// After every input: what time and the input have made due.
    mutating func settle() {
        expireResourceTimeouts()
        removeEmptyInvalidatedSessions()
        pauseTasksNoLongerAllowed()
        startTasks()
        deliverDueEvents()
    }

    /// Seed 003: "NSURLSession tasks have an overall timeout which you can configure via
    /// NSURLSessionConfiguration's timeoutIntervalForResource property."
    private mutating func expireResourceTimeouts() {
        for task in tasks.values.sorted(by: { $0.id < $1.id }) where !task.isFinished && task.deadline <= now {
            finish(task.id, error: .timedOut)
        }
    }

    private mutating func removeEmptyInvalidatedSessions() {
        let used = Set(tasks.values.map(\.session))
        for (id, session) in state.sessions where session.invalidated && !used.contains(id) {
            state.sessions[id] = nil
            stateChanged = true
        }
    }

    /// What keeps a task from running under the present conditions, if anything; the
    /// network being down only keeps tasks from starting (running ones fail by themselves).
    func conditionBlocking(_ task: TransferTask) -> TransferWaitReason? {
        let conditions = state.conditions
        if !conditions.network.isAvailable { return .noNetwork }
        if conditions.network.isExpensive && !task.options.allowsExpensiveNetworkAccess { return .expensiveNetwork }
        if task.isDiscretionary {
            if conditions.power == .battery { return .onBattery }
            if conditions.network.isExpensive { return .expensiveNetwork }
            let kind = conditions.network.kind
            if let until = state.budgets.spentUntil(kind, at: now, budget: configuration.budget(for: kind), length: configuration.budgetWindow) {
                return .budgetSpent(until: until)
            }
        }
        return nil
    }

    /// Why a task is waiting (nil: it is not waiting).
    public func waitReason(of id: TransferTaskID, at now: Date) -> TransferWaitReason? {
        guard let task = tasks[id], case .waiting(let notBefore) = task.phase else { return nil }
        if let notBefore, notBefore > now { return .notBefore(notBefore) }
        var engine = self
        engine.now = now
        return engine.conditionBlocking(task) ?? .queued
    }

    /// Discretionary tasks stop when conditions turn against them, and tasks that may not
    /// use an expensive network stop when it becomes one; a download keeps its partial file.
    private mutating func pauseTasksNoLongerAllowed() {
        for task in tasks.values.sorted(by: { $0.id < $1.id }) {
            guard var attempt = task.runningAttempt, !attempt.pausing else { continue }
            guard let reason = conditionBlocking(task), reason != .noNetwork else { continue }
            attempt.pausing = true
            tasks[task.id]?.phase = .running(attempt)
            actions.append(.stop(app: task.session.app, task: task.id, attempt: attempt.number, keepPartial: true))
        }
    }

    /// Starts waiting tasks by priority (then age) within the overall and per-host limits.
    /// A task held back by its host's limit lets tasks to other hosts go first; nothing
    /// running is ever stopped for a task of higher priority.
    private mutating func startTasks() {
        var running = 0
        var perHost: [String: Int] = [:]
        for task in tasks.values where task.runningAttempt != nil {
            running += 1
            perHost[task.host, default: 0] += 1
        }
        guard running < configuration.maximumConcurrentTransfers else { return }
        let ready = tasks.values.filter { task in
            guard case .waiting(let notBefore) = task.phase else { return false }
            if let notBefore, notBefore > now { return false }
            return conditionBlocking(task) == nil
        }.sorted { a, b in
            if a.priority != b.priority { return a.priority > b.priority }
            if a.createdAt != b.createdAt { return a.createdAt < b.createdAt }
            return a.id < b.id
        }
        for task in ready {
            guard running < configuration.maximumConcurrentTransfers else { break }
            guard perHost[task.host, default: 0] < configuration.maximumConcurrentTransfersPerHost else { continue }
            start(task.id)
            running += 1
            perHost[task.host, default: 0] += 1
        }
    }

    /// The next time something is due without any input: a resource timeout, the end of a
    /// back-off or work period, a budget window closing, a delivery the limiter or the
    /// coalescing window holds back. nil when nothing is.
    public var nextDeadline: Date? {
        var earliest: Date?
        func consider(_ date: Date?) {
            guard let date else { return }
            if earliest == nil || date < earliest! { earliest = date }
        }
        var waitingDiscretionary = false
        for task in tasks.values {
            guard !task.isFinished else { continue }
            consider(task.deadline)
            if case .waiting(let notBefore) = task.phase {
                if let notBefore, notBefore > now { consider(notBefore) }
                waitingDiscretionary = waitingDiscretionary || task.isDiscretionary
            }
        }
        if waitingDiscretionary {
            let kind = state.conditions.network.kind
            consider(state.budgets.spentUntil(kind, at: now, budget: configuration.budget(for: kind), length: configuration.budgetWindow))
        }
        for name in state.apps.keys {
            if let due = deliveryDue(for: name), due > now { consider(due) }
        }
        return earliest
    }
}

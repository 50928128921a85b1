import FoundationEssentials

extension TransferEngine {
    mutating func attemptReported(_ report: AttemptReport) {
        // Reports of an attempt that is no longer the task's current one (stopped, timed
        // out, cancelled) are late news.
        guard let task = tasks[report.task], var attempt = task.runningAttempt, attempt.number == report.attempt else { return }
        let app = task.session.app
        switch report.event {
        case .response(let head, let resumedFrom):
            attempt.resumedFrom = max(0, resumedFrom)
            tasks[task.id]?.phase = .running(attempt)
            // A response means the network works again.
            tasks[task.id]?.failuresInARow = 0
            if task.kind.isDownload && head.isSuccess {
                tasks[task.id]?.resumeValidator = RangeResumption.validator(for: head)
            }
            changedTasks.insert(task.id)
        case .progress(let progress):
            tasks[task.id]?.progress = progress
            count(progress, of: task.id)
            if self.app(app).presence.isRunning {
                actions.append(.progress(app: app, TransferEvent(task: task.id, session: task.session.identifier, kind: .progress(progress))))
            }
        case .ended(let outcome, let progress):
            tasks[task.id]?.progress = progress
            count(progress, of: task.id)
            stateChanged = true
            attemptEnded(task.id, outcome)
        }
    }

    /// Counts the bytes an attempt moved since its last report against the budget of the
    /// network it runs on.
    private mutating func count(_ progress: TransferProgress, of id: TransferTaskID) {
        guard var attempt = tasks[id]?.runningAttempt else { return }
        let moved = progress.bytesSent + max(0, progress.bytesReceived - attempt.resumedFrom)
        let delta = moved - attempt.countedBytes
        guard delta > 0 else { return }
        state.budgets.record(delta, on: attempt.network, at: now, length: configuration.budgetWindow)
        statistics.bytes += delta
        attempt.countedBytes = moved
        tasks[id]?.phase = .running(attempt)
    }

    private mutating func attemptEnded(_ id: TransferTaskID, _ outcome: AttemptOutcome) {
        changedTasks.insert(id)
        switch outcome {
        case .completed(let head):
            finish(id, response: head, error: nil, attemptEnded: true)
        case .httpError(let head):
            finish(id, response: head, error: .http(status: head.status), attemptEnded: true)
        case .challenged(let head):
            guard var task = tasks[id] else { return }
            if task.credential != nil { task.challengeFailures += 1 }
            task.credential = nil
            let challenge = AuthenticationChallenge(response: head, previousFailureCount: task.challengeFailures)
                ?? AuthenticationChallenge(scheme: "unknown", realm: nil, previousFailureCount: task.challengeFailures, response: head)
            task.phase = .challenged(challenge, .pending(since: now))
            tasks[id] = task
        case .networkFailure(let failure) where failure.isTransient:
            guard var task = tasks[id] else { return }
            task.failuresInARow += 1
            task.lastFailure = failure.message
            let delay = configuration.retry.delay(afterFailures: task.failuresInARow)
            task.phase = .waiting(notBefore: now.addingTimeInterval(delay))
            tasks[id] = task
        case .networkFailure(let failure):
            finish(id, error: .network(failure), attemptEnded: true)
        case .fileFailure(let message):
            finish(id, error: .file(message), attemptEnded: true)
        case .stopped:
            // Paused for conditions (or stopped by an agent going away): wait again, without
            // counting a failure.
            tasks[id]?.phase = .waiting(notBefore: nil)
        }
    }

    /// Ends a task: it stops, its partial file goes, and its completion waits for delivery.
    /// `attemptEnded`: the agent reported the attempt's end (and has cleaned up after it).
    mutating func finish(_ id: TransferTaskID, response: HTTPResponseHead? = nil, error: TransferError?, attemptEnded: Bool = false) {
        guard var task = tasks[id], !task.isFinished else { return }
        let app = task.session.app
        if !attemptEnded {
            if let attempt = task.runningAttempt {
                actions.append(.stop(app: app, task: id, attempt: attempt.number, keepPartial: false))
            }
            // Also when an attempt runs: it may be ending already, keeping its partial file
            // for a resumption that will not come, or its agent may be gone (the stop then
            // reaches no one). The agent takes the commands in order.
            if let partial = task.partialPath, task.attemptsStarted > 0 {
                actions.append(.discardPartial(app: app, task: id, path: partial))
            }
        }
        task.credential = nil
        task.phase = .finished(TransferCompletion(response: response, error: error, progress: task.progress), .pending(since: now))
        statistics.completions[TransferStatistics.result(of: error), default: 0] += 1
        tasks[id] = task
        changedTasks.insert(id)
    }

    /// Starts the next attempt of a waiting task.
    mutating func start(_ id: TransferTaskID) {
        guard var task = tasks[id] else { return }
        task.attemptsStarted += 1
        statistics.attemptsStarted += 1
        task.phase = .running(RunningAttempt(number: task.attemptsStarted, startedAt: now, network: state.conditions.network.kind))
        var request = task.request
        if let credential = task.credential {
            let token = Data("\(credential.user):\(credential.password)".utf8).base64EncodedString()
            request.headers.set("Authorization", "Basic \(token)")
        }
        if task.kind.isDownload && !request.headers.contains("Accept-Encoding") {
            // A Range counts the bytes as sent; a body decoded on the way could not resume.
            request.headers.append("Accept-Encoding", "identity")
        }
        let order = AttemptOrder(task: id, attempt: task.attemptsStarted, kind: task.kind, partialPath: task.partialPath,
                                 request: request, resumeFrom: task.attemptsStarted > 1 ? task.resumeValidator : nil,
                                 timeoutIntervalForRequest: task.options.timeoutIntervalForRequest,
                                 progressInterval: configuration.progressInterval)
        tasks[id] = task
        changedTasks.insert(id)
        actions.append(.start(app: task.session.app, order))
    }
}

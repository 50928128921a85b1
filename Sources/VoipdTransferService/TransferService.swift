import FoundationEssentials
import Glibc
import VoipdSystem
import VoipdTransfers
import VoipdVocabulary

/// What the transfer service needs from the loop that hosts it (voipd's epoll loop, or the
/// small one of tests and benchmarks, ``TransferServiceLoop``). Every call into the service
/// may change ``TransferService/nextDeadline``: the host re-arms its timer after each.
public protocol TransferServiceHost: AnyObject {
    /// Watch `descriptor` for `events` (add, or change the events of a watched one);
    /// readiness comes back with `token`.
    func watch(_ descriptor: borrowing FileDescriptor, events: EpollEvents, token: UInt64)
    /// Stop watching it (before it is closed).
    func unwatch(_ descriptor: borrowing FileDescriptor)
    /// Hand events to an app, resuming or relaunching it first as `delivery.wake` says; then
    /// ``TransferService/handle(_:)`` with `.eventsHandled` when the app says it handled them,
    /// or `.deliveryFailed` when it cannot be reached.
    func deliver(_ delivery: TransferDelivery)
    /// Progress of a running app's task.
    func progress(app: String, _ event: TransferEvent)
    func log(_ message: String)
}

/// The background-transfer service: the engine, its store, and the agents that carry the
/// attempts, driven by the host's loop. It never blocks: agents are separate processes
/// spoken to over non-blocking sockets, and their reports come back as readiness.
public final class TransferService {
    public private(set) var engine: TransferEngine
    private let store: TransferStore
    private let launcher: TransferAgentLauncher
    private weak var host: (any TransferServiceHost)?
    private let clock: () -> Date
    private var agents: [uid_t: TransferAgentProcess] = [:]
    private var agentsByToken: [UInt64: TransferAgentProcess] = [:]
    private var nextToken: UInt64
    /// Agents ended for an exec that may yet fail (``endAgentsBeforeExec()``).
    private var endedForExec: [TransferAgentProcess] = []
    /// How long an agent with nothing to do is kept before it is told to end.
    public var agentIdleTimeout: Double = 30

    /// Opens the store and carries on from what it holds.
    public init(configuration: TransferConfiguration, store: TransferStore, launcher: TransferAgentLauncher,
                host: any TransferServiceHost, firstToken: UInt64 = 1 << 48, clock: @escaping () -> Date = Date.init) throws {
        if let problem = configuration.problem { throw TransferServiceError(description: "transfer configuration: \(problem)") }
        self.store = store
        self.launcher = launcher
        self.host = host
        self.clock = clock
        nextToken = firstToken
        let contents = try store.load()
        for problem in contents.problems { host.log(problem) }
        engine = TransferEngine(configuration: configuration, restoring: contents.state ?? TransferEngine.DurableState(), tasks: contents.tasks)
        perform(engine.handle(.tick, now: clock()))
    }

    // MARK: - Inputs from the host

    /// Feeds an input (an app's request, its presence, the conditions) and performs what
    /// follows; returns the reply to a request.
    @discardableResult
    public func handle(_ input: TransferInput) -> TransferReply? {
        let step = engine.handle(input, now: clock())
        perform(step)
        return step.reply
    }

    /// The next wall-clock time the host's timer must call ``timerFired()``.
    public var nextDeadline: Date? {
        var earliest = engine.nextDeadline
        for agent in agents.values {
            guard let idle = agent.idleSince else { continue }
            let due = idle.addingTimeInterval(agentIdleTimeout)
            if earliest == nil || due < earliest! { earliest = due }
        }
        return earliest
    }

    public func timerFired() {
        let now = clock()
        for agent in Array(agents.values) {
            if let idle = agent.idleSince, idle.addingTimeInterval(agentIdleTimeout) <= now, agent.attempts.isEmpty {
                retire(agent)
            }
        }
        perform(engine.handle(.tick, now: now))
    }

    /// A watched descriptor is ready.
    public func descriptorReady(token: UInt64, events: EpollEvents) {
        guard let agent = agentsByToken[token] else { return }
        if token == agent.processToken {
            agentExited(agent)
            return
        }
        if events.contains(.writable) {
            if !agent.flush() { return agentLost(agent, "its socket failed") }
            updateWatch(agent)
        }
        if !events.isDisjoint(with: [.readable, .hangup, .error]) { readReports(agent) }
    }

    /// Ends every agent (voipd is stopping): their sockets close, and they end, leaving
    /// partial files for the attempts voipd will resume next time.
    public func shutdown() {
        // The records still say the attempts run: the next start carries on from them.
        for agent in Array(agents.values) { release(agent) }
    }

    /// Ends every agent at once and reaps it, for voipd to execute itself again (an in-place
    /// upgrade): the agents are voipd's children, and their pidfds, which reap them, do not
    /// cross the exec, so an agent left to end by itself would stay a zombie for as long as
    /// voipd runs. The records still say the attempts run, so the new program starts them
    /// again at once, from their partial files (with a Range request); each file's lock
    /// went with its agent.
    ///
    /// This waits for the kernel to tear the killed processes down, but at most `limit` for
    /// them all: an agent in an uninterruptible sleep (a write to a hung NFS server, a
    /// frozen cgroup v1 freezer) ends only when that sleep does, and must hold neither the
    /// upgrade nor voipd's loop. Each agent not ended by then is passed to `stillEnding`, as
    /// a pidfd of its own, for the host to reap when it ends (carried across the exec); its
    /// partial file stays locked until then, and the new program's attempt on it waits and
    /// retries as after any transient failure.
    public func endAgentsBeforeExec(waitingAtMost limit: Duration = .seconds(1), stillEnding: (consuming PidFd) -> Void) {
        shutdown()
        // What is left are the processes not yet reaped, each under its process token.
        var ending: [TransferAgentProcess] = []
        for agent in agentsByToken.values {
            host?.unwatch(agent.process.descriptor)
            endedForExec.append(agent)
            do {
                try agent.process.send(SIGKILL)
                ending.append(agent)
            } catch {
                host?.log("transfers: cannot end the agent of uid \(agent.uid) (pid \(agent.process.pid)): \(error)")
            }
        }
        agentsByToken = [:]
        let deadline = MonotonicInstant.now + limit
        while !ending.isEmpty {
            ending.removeAll { agent in
                do {
                    return try agent.process.reapIfExited() != nil
                } catch {
                    host?.log("transfers: cannot reap the agent of uid \(agent.uid) (pid \(agent.process.pid)): \(error)")
                    return true
                }
            }
            let timeout = pollTimeout(until: deadline)
            guard !ending.isEmpty, timeout > 0 else { break }
            var descriptors = ending.map { pollfd(fd: $0.process.descriptor.rawValue, events: Int16(POLLIN), revents: 0) }
            do {
                _ = try poll(&descriptors, timeoutMilliseconds: timeout)
            } catch {
                host?.log("transfers: cannot wait for the agents to end: \(error)")
                break
            }
        }
        for agent in ending {
            do {
                stillEnding(PidFd(adopting: try agent.process.descriptor.duplicate(), pid: agent.process.pid))
                host?.log("transfers: the agent of uid \(agent.uid) (pid \(agent.process.pid)) has not ended \(limit) after SIGKILL (an uninterruptible sleep): it is reaped when it ends")
            } catch {
                host?.log("transfers: the agent of uid \(agent.uid) (pid \(agent.process.pid)) has not ended \(limit) after SIGKILL, and cannot be watched (\(error)): it stays a zombie when it ends")
            }
        }
    }

    /// The exec did not happen: the attempts of the agents ended for it fail, as when an
    /// agent dies, and are retried.
    public func execFailed() {
        let ended = endedForExec
        endedForExec = []
        for agent in ended { failAttempts(of: agent, "the transfer agent was ended for an upgrade that failed") }
    }

    /// The pids of the agents started and not yet reaped.
    public var agentProcesses: [pid_t] {
        agentsByToken.compactMap { token, agent in token == agent.processToken ? agent.process.pid : nil }
    }

    // MARK: - Performing the engine's actions

    private func perform(_ step: TransferStep) {
        var pending = step.actions
        var forHost: [TransferAction] = []
        while !pending.isEmpty {
            let action = pending.removeFirst()
            switch action {
            case .deliver, .progress: forHost.append(action)
            default: if let follow = perform(action) { pending += follow.actions }
            }
        }
        // The host last: it may call back into the service (an app handling its events at
        // once), which then finds this step complete.
        for action in forHost {
            switch action {
            case .deliver(let delivery): host?.deliver(delivery)
            case .progress(let app, let event): host?.progress(app: app, event)
            default: break
            }
        }
    }

    /// Performs one action; an attempt that cannot reach its agent is reported ended at
    /// once, and the engine's answer to that is returned to be performed in turn.
    private func perform(_ action: TransferAction) -> TransferStep? {
        switch action {
        case .start(let app, let order):
            return send(.start(order), to: app, attempt: (order.task, order.attempt))
        case .stop(let app, let task, let attempt, let keepPartial):
            // An attempt runs only in a live agent; none, nothing to stop.
            guard let uid = try? uid(of: app), agents[uid]?.attempts[task] == attempt else { return nil }
            return send(.stop(task: task, attempt: attempt, keepPartial: keepPartial), to: app, attempt: nil)
        case .discardPartial(let app, let task, let path):
            return send(.discardPartial(task: task, path: path), to: app, attempt: nil)
        case .deliver, .progress:
            break
        case .saveTask(let task):
            record("save task \(task.id)") { try store.save(task) }
        case .forgetTask(let id):
            record("remove task \(id)") { try store.forget(id) }
        case .saveState:
            record("save the transfer state") { try store.save(engine.durableState) }
        }
        return nil
    }

    private func record(_ what: String, _ body: () throws -> Void) {
        do {
            try body()
        } catch {
            // The engine carries on in memory; the record is written again at its next change.
            host?.log("transfers: cannot \(what): \(error)")
        }
    }

    private func send(_ command: AgentCommand, to app: String, attempt: (task: TransferTaskID, number: Int)?) -> TransferStep? {
        let agent: TransferAgentProcess
        do {
            agent = try self.agent(for: app)
        } catch let error as TransferServiceError {
            guard let attempt else { return nil }
            return engine.handle(.attempt(AttemptReport(task: attempt.task, attempt: attempt.number,
                                                        event: .ended(.fileFailure(error.description), TransferProgress()))), now: clock())
        } catch {
            host?.log("transfers: cannot start the transfer agent of \(app): \(error)")
            guard let attempt else { return nil }
            let failure = NetworkFailure(code: 0, message: "cannot start the transfer agent: \(error)", isTransient: true)
            return engine.handle(.attempt(AttemptReport(task: attempt.task, attempt: attempt.number,
                                                        event: .ended(.networkFailure(failure), TransferProgress()))), now: clock())
        }
        let packet: [UInt8]
        do {
            packet = try agent.packet(for: command)
        } catch {
            // voipd's command, not the agent's fault: the attempt fails for good, the agent
            // and the attempts it carries for other tasks go on.
            host?.log("transfers: a command for the transfer agent of \(app) is not sent: \(error)")
            if agent.attempts.isEmpty, agent.idleSince == nil { agent.idleSince = clock() }
            guard let attempt else { return nil }
            let failure = NetworkFailure(code: Self.dataLengthExceedsMaximum, message: "the request is too large for the transfer agent: \(error)",
                                         isTransient: false)
            return engine.handle(.attempt(AttemptReport(task: attempt.task, attempt: attempt.number,
                                                        event: .ended(.networkFailure(failure), TransferProgress()))), now: clock())
        }
        if let attempt { agent.attempts[attempt.task] = attempt.number }
        agent.idleSince = agent.attempts.isEmpty ? clock() : nil
        if !agent.send(packet) {
            agentLost(agent, "it does not take commands")
            return nil
        }
        updateWatch(agent)
        return nil
    }

    /// The code of the network failure of a request too large for the agent: URLSession's
    /// `NSURLErrorDataLengthExceedsMaximum`.
    public static let dataLengthExceedsMaximum = -1103

    private func credentials(of app: String) throws -> SpawnCredentials? {
        do {
            return try launcher.credentials(app)
        } catch {
            throw TransferServiceError(description: "no account to run the transfers of \(app) as: \(error)")
        }
    }

    private func uid(of app: String) throws -> uid_t { try credentials(of: app)?.uid ?? geteuid() }

    /// The agent of the app's account, started if there is none.
    private func agent(for app: String) throws -> TransferAgentProcess {
        let credentials = try self.credentials(of: app)
        let uid = credentials?.uid ?? geteuid()
        if let agent = agents[uid] { return agent }
        let agent = try TransferAgentProcess(launcher: launcher, credentials: credentials,
                                             socketToken: takeToken(), processToken: takeToken())
        agents[uid] = agent
        agentsByToken[agent.socketToken] = agent
        agentsByToken[agent.processToken] = agent
        host?.watch(agent.process.descriptor, events: .readable, token: agent.processToken)
        updateWatch(agent)
        return agent
    }

    private func takeToken() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }

    private func updateWatch(_ agent: TransferAgentProcess) {
        agent.withSocket { socket in
            host?.watch(socket, events: agent.hasQueuedOutput ? [.readable, .writable] : .readable, token: agent.socketToken)
        }
    }

    // MARK: - Reports

    private func readReports(_ agent: TransferAgentProcess) {
        let reports: [AgentReport]?
        do {
            reports = try agent.receive()
        } catch let error as Errno {
            return agentLost(agent, "its socket failed (\(error))")
        } catch {
            return agentLost(agent, "it sent something that is not a report (\(error))")
        }
        guard let reports else { return agentLost(agent, "it closed its socket") }
        handleReports(reports, from: agent)
        // More may be waiting; epoll is level-triggered and says so again.
    }

    private func handleReports(_ reports: [AgentReport], from agent: TransferAgentProcess) {
        for report in reports {
            switch report {
            case .ready(_, let uid, _):
                guard uid == agent.uid else { return agentLost(agent, "it runs as uid \(uid), not \(agent.uid)") }
                agent.ready = true
            case .attempt(let attempt):
                // An agent runs as an app's user, who may do anything with it: it speaks only
                // of the attempts voipd gave it.
                guard agent.attempts[attempt.task] == attempt.attempt else { continue }
                if case .ended = attempt.event {
                    agent.attempts[attempt.task] = nil
                    if agent.attempts.isEmpty { agent.idleSince = clock() }
                }
                perform(engine.handle(.attempt(attempt), now: clock()))
            }
        }
    }

    /// The agent cannot go on: it is killed, and its attempts fail as a network failure (they
    /// are retried, a download from its partial file).
    private func agentLost(_ agent: TransferAgentProcess, _ why: String) {
        host?.log("transfers: the agent of uid \(agent.uid) (pid \(agent.process.pid)) is ended: \(why)")
        try? agent.process.send(SIGKILL)
        release(agent)
        failAttempts(of: agent, "the transfer agent was ended: \(why)")
    }

    private func agentExited(_ agent: TransferAgentProcess) {
        let status = (try? agent.process.reapIfExited()) ?? nil
        guard let status else { return }
        host?.unwatch(agent.process.descriptor)
        agentsByToken[agent.processToken] = nil
        if agents[agent.uid] === agent {
            // What it said before it ended still counts.
            while agent.isSocketOpen, let reports = try? agent.receive(), !reports.isEmpty {
                handleReports(reports, from: agent)
            }
            release(agent)
            if !agent.attempts.isEmpty { host?.log("transfers: the agent of uid \(agent.uid) ended (\(status))") }
            failAttempts(of: agent, "the transfer agent ended (\(status))")
        }
    }

    /// An idle agent is told to end by closing its socket; its exit is reaped when seen.
    private func retire(_ agent: TransferAgentProcess) {
        release(agent)
    }

    /// Forgets the agent's socket; its process stays watched until it has been reaped.
    private func release(_ agent: TransferAgentProcess) {
        agent.withSocket { socket in host?.unwatch(socket) }
        agentsByToken[agent.socketToken] = nil
        agent.closeSocket()
        if agents[agent.uid] === agent { agents[agent.uid] = nil }
    }

    private func failAttempts(of agent: TransferAgentProcess, _ why: String) {
        let attempts = agent.attempts
        agent.attempts = [:]
        for (task, number) in attempts.sorted(by: { $0.key < $1.key }) {
            let failure = NetworkFailure(code: 0, message: why, isTransient: true)
            let progress = engine.tasks[task]?.progress ?? TransferProgress()
            perform(engine.handle(.attempt(AttemptReport(task: task, attempt: number, event: .ended(.networkFailure(failure), progress))),
                                  now: clock()))
        }
    }
}

/// A problem of the service itself (its configuration, an app without an account).
public struct TransferServiceError: Error, CustomStringConvertible {
    public var description: String
}

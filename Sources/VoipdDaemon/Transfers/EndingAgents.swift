import Glibc
import VoipdSystem

/// Transfer agents killed for an in-place upgrade that had not ended by its deadline
/// (``TransferService/endAgentsBeforeExec(waitingAtMost:stillEnding:)``): an agent in an
/// uninterruptible sleep ends only when that sleep does. They are voipd's children, so voipd
/// reaps each when its pidfd says it ended, whichever program voipd runs by then: the pidfds
/// cross each later upgrade too (``DaemonSnapshot/endingAgents``).
final class EndingAgents {
    private final class Agent {
        let process: PidFd
        var token: UInt64 = 0

        init(_ process: consuming PidFd) { self.process = process }
    }

    /// By pid: a child's pid stays its own until it is reaped.
    private var byPid: [pid_t: Agent] = [:]

    var count: Int { byPid.count }

    /// Watches `process` in the loop until it ends (`EPOLLIN` on its pidfd).
    func add(_ process: consuming PidFd, loop: EventLoop, log: Logger) {
        let agent = Agent(process)
        do {
            agent.token = try loop.register(agent.process.descriptor, .readable, .endingAgent(agent.process.pid))
            byPid[agent.process.pid] = agent
        } catch {
            log.error("transfers: cannot watch the ending agent (pid \(agent.process.pid)): \(error); it stays a zombie when it ends")
        }
    }

    /// One of them is ready: reaped if it ended.
    func ready(_ pid: pid_t, loop: EventLoop, log: Logger) {
        guard let agent = byPid[pid] else { return }
        let status: ProcessStatus?
        do {
            status = try agent.process.reapIfExited()
        } catch {
            // Level-triggered: a pidfd that keeps failing would spin the loop.
            log.error("transfers: cannot reap the ending agent (pid \(agent.process.pid)): \(error)")
            loop.deregister(agent.process.descriptor, token: agent.token)
            byPid[pid] = nil
            return
        }
        guard let status else { return }
        log.info("transfers: the agent killed for an upgrade (pid \(agent.process.pid)) ended at last (\(status))")
        loop.deregister(agent.process.descriptor, token: agent.token)
        byPid[pid] = nil
    }

    /// Lends each pidfd to `body` (to carry it across an exec).
    func forEach(_ body: (borrowing FileDescriptor) throws(Errno) -> Void) throws(Errno) {
        for agent in byPid.values { try body(agent.process.descriptor) }
    }

    /// The pidfds' numbers, for the snapshot.
    var descriptors: [CInt] { byPid.values.map { $0.process.descriptor.rawValue } }
}

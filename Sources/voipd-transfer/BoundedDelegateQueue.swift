import Foundation
import FoundationNetworking

/// The flow control URLSession lacks on Linux, as its delegate queue. URLSession's loop
/// reads the network as fast as data comes and hands every 16 KiB chunk to the delegate
/// queue with `addOperation`; nothing slows it when the delegate falls behind (a disk slower
/// than the network, a flush, a busy machine), so the queue, and the agent's memory, grew
/// without bound: a 1 GiB download from loopback peaked at 868 MiB resident. Here
/// `addOperation`, which runs on URLSession's loop, waits while `limit` calls are queued, so
/// the loop stops reading the socket and TCP's own flow control slows the server, until
/// the delegate takes the queued calls to run them.
///
/// URLSession calls that wait for its loop (making a task, `resume()`, `cancel()`) must
/// not be made on the delegate's queue, which the loop may be waiting for: the agent makes
/// them on each attempt's own queue, for each attempt's own session (`TransferAgent`).
///
/// Every `limit` calls the loop that makes one also lets go of URLSession's queue for a turn
/// (``yieldLoop()``): every session's loop runs on one serial queue, and a download faster
/// than the agent holds it for as long as it lasts.
final class BoundedDelegateQueue: OperationQueue, @unchecked Sendable {
    /// About 8 MiB of queued chunks, and as many more in the batch being run.
    static let limit = 512

    /// Where the calls run: the agent's serial queue.
    private let target: DispatchQueue
    private let condition = NSCondition()
    private var pending: [@Sendable () -> Void] = []
    private var drainScheduled = false
    /// Calls taken since a loop last let go of URLSession's queue.
    private var sinceYield = 0

    init(target: DispatchQueue) {
        self.target = target
        super.init()
        maxConcurrentOperationCount = 1
        underlyingQueue = target
    }

    /// URLSession's way in for every delegate call. The calls are run in order. With nothing
    /// queued ahead, the call runs here, on URLSession's thread, holding the agent's queue
    /// (`sync` on an idle serial queue runs the block on the calling thread): no other
    /// thread is woken for it. A hand-over for every 16 KiB chunk (a wake-up of a dispatch
    /// worker and a futex round each way) was most of the agent's system calls, about 1.2
    /// futex calls a chunk (docs/BENCHMARKS.md). While the agent's queue is busy (a command,
    /// a flush), calls are queued and run in batches instead: one wake-up of the agent's
    /// queue for all the chunks that came meanwhile, rather than an `Operation`, the queue's
    /// locks and a dispatch for each 16 KiB.
    override func addOperation(_ block: @Sendable @escaping () -> Void) {
        condition.lock()
        sinceYield += 1
        let yield = sinceYield >= Self.limit
        if yield { sinceYield = 0 }
        // Once the call is run or queued, either way.
        defer { if yield { yieldLoop() } }
        if pending.isEmpty && !drainScheduled {
            // Every call comes from URLSession's serial work queue (its sessions' queues all
            // target one), so no other call can overtake this one between the unlock and
            // the `sync`. The agent's queue never waits for URLSession's (its URLSession
            // calls are made elsewhere, `TransferAgent`), so this cannot deadlock.
            condition.unlock()
            target.sync(execute: block)
            return
        }
        while pending.count >= Self.limit { condition.wait() }
        pending.append(block)
        let schedule = !drainScheduled
        drainScheduled = true
        condition.unlock()
        if schedule { target.async { self.drain() } }
    }

    // MARK: - Letting go of URLSession's queue

    /// The loop's queue of a session, as ``yieldLoop()`` finds it: a weak reference (the
    /// queue holds it as its specific value).
    private final class LoopQueue: @unchecked Sendable {
        weak var queue: DispatchQueue?
        init(_ queue: DispatchQueue) { self.queue = queue }
    }

    private static let loopKey = DispatchSpecificKey<LoopQueue>()
    /// A session of no task, whose turns on URLSession's queue ``yieldLoop()`` waits for.
    private let turns = URLSession(configuration: .ephemeral)
    private var missingLoopReported = false

    /// Marks the queue `session`'s loop runs on, for ``yieldLoop()``. In swift-corelibs-
    /// foundation 6.3 it is the `queue` of the session's `multiHandle` (internal: found by
    /// reflection); every session's queues there target one serial queue
    /// (`URLSession.sharedQueue`), so the loops and the calls that wait for them
    /// (`workQueue.sync`) of all the agent's sessions take turns on one thread.
    func register(_ session: URLSession) {
        guard let queue = Mirror(reflecting: session).descendant("multiHandle", "queue") as? DispatchQueue else {
            condition.lock()
            let report = !missingLoopReported
            missingLoopReported = true
            condition.unlock()
            if report { Log.error("URLSession's loop queue is not where it was (multiHandle.queue): a fast download may hold off the other attempts") }
            return
        }
        queue.setSpecific(key: Self.loopKey, value: LoopQueue(queue))
    }

    /// Lets the loop making this call go of URLSession's queue after the libcurl pass it is
    /// in, for a turn: its queue is suspended, and resumed once URLSession's queue has come to
    /// a call of ``turns`` made now, after what waited already (other sessions' task
    /// creations, `resume()`, `cancel()`, their sockets' events).
    ///
    /// Without it a download that comes faster than the agent takes it held URLSession's
    /// queue for as long as it lasted: libcurl (7.88) ends a pass over a socket that still
    /// has data by asking to be run again at once (a timeout of 0), FoundationNetworking
    /// queues that run on the loop's queue from within the pass, and libdispatch drains a
    /// serial queue until it is empty or suspended. `AgentCommandTests.startBesideFastDownload`
    /// under load: 45 attempts waited in `dataTask(with:)` for a minute and more.
    private func yieldLoop() {
        guard let queue = DispatchQueue.getSpecific(key: Self.loopKey)?.queue else { return }
        queue.suspend()
        // The queue is held here until it is resumed: a suspended queue must not be freed.
        turns.getAllTasks { _ in queue.resume() }
    }

    /// Runs what is pending, batch after batch, until nothing is.
    private func drain() {
        var batch: [@Sendable () -> Void] = []
        while true {
            condition.lock()
            if pending.isEmpty {
                drainScheduled = false
                condition.unlock()
                return
            }
            swap(&batch, &pending)
            condition.broadcast()
            condition.unlock()
            for block in batch { block() }
            batch.removeAll(keepingCapacity: true)
        }
    }

}

import Foundation

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
final class BoundedDelegateQueue: OperationQueue, @unchecked Sendable {
    /// About 8 MiB of queued chunks, and as many more in the batch being run.
    static let limit = 512

    /// Where the calls run: the agent's serial queue.
    private let target: DispatchQueue
    private let condition = NSCondition()
    private var pending: [@Sendable () -> Void] = []
    private var drainScheduled = false

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

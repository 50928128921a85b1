import Foundation

/// The flow control URLSession lacks on Linux, as its delegate queue. URLSession's loop
/// reads the network as fast as data comes and hands every 16 KiB chunk to the delegate
/// queue with `addOperation`; nothing slows it when the delegate falls behind (a disk slower
/// than the network, a flush, a busy machine), so the queue, and the agent's memory, grew
/// without bound: a 1 GiB download from loopback peaked at 868 MiB resident. Here
/// `addOperation`, which runs on URLSession's loop, waits while `limit` calls are queued, so
/// the loop stops reading the socket and TCP's own flow control slows the server, until
/// the delegate is down to `resumeBelow`.
///
/// URLSession calls that wait for its loop (`resume()` does) must not be made from the
/// delegate while the loop waits for the delegate: ``withLoopFree(_:)`` lets the loop go on
/// for the time of such a call.
final class BoundedDelegateQueue: OperationQueue, @unchecked Sendable {
    /// About 16 MiB of queued chunks.
    static let limit = 1024
    static let resumeBelow = 512

    private let condition = NSCondition()
    private var queued = 0
    private var loopFreed = 0

    override func addOperation(_ block: @Sendable @escaping () -> Void) {
        condition.lock()
        while queued >= Self.limit && loopFreed == 0 { condition.wait() }
        queued += 1
        condition.unlock()
        super.addOperation { [self] in
            block()
            condition.lock()
            queued -= 1
            if queued <= Self.resumeBelow { condition.broadcast() }
            condition.unlock()
        }
    }

    /// Runs `body` (on the delegate queue) with URLSession's loop free to go on meanwhile.
    func withLoopFree<T>(_ body: () throws -> T) rethrows -> T {
        condition.lock()
        loopFreed += 1
        condition.broadcast()
        condition.unlock()
        defer {
            condition.lock()
            loopFreed -= 1
            condition.unlock()
        }
        return try body()
    }

    /// Delegate calls queued now.
    var queuedCalls: Int {
        condition.lock()
        defer { condition.unlock() }
        return queued
    }
}

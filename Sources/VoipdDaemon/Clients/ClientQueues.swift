import Glibc
import VoipdSystem

/// What voipd keeps for clients that do not read their replies and events: each connection's
/// queue is bounded in bytes (`limits.clientQueueBytes`) and so is the sum over all of them
/// (`limits.totalQueueBytes`). A connection over its bound is closed; over the total, the one
/// with the most waiting is. Memory a large queue held is handed back to the system when it
/// goes (`malloc_trim`).
final class ClientQueues {
    /// Bytes waiting over all connections, overheads included.
    var totalBytes = 0
    /// Connections closed for not reading (for `voipctl stats`).
    var overflows = 0

    /// What one queued frame costs beyond its bytes (its array, the queue's entry).
    static let frameOverhead = 64
    /// What each descriptor queued with a frame costs: voipd's descriptors are scarcer than
    /// its bytes, so a client cannot hoard them (256 at most in the default 1 MiB).
    static let descriptorCost = 4096
    /// Freeing at least this much makes voipd hand free memory back to the system.
    static let trimThreshold = 256 * 1024

    static func cost(of packet: [UInt8], descriptors: Int) -> Int {
        packet.count + frameOverhead + descriptors * descriptorCost
    }
}

extension Daemon {
    /// Queues a frame the kernel could not take yet. Returns false, having closed the client,
    /// when that would put it over its bound. The first frame waiting is always let wait:
    /// the bound is at least one frame (65536 bytes), but a frame's cost counts its overhead
    /// too, so a full frame (a list reply's, written as the client reads) cost more than the
    /// smallest bound, and a client reading its list was closed as "not reading" whenever
    /// such a frame found its socket full.
    func enqueue(_ packet: [UInt8], _ descriptors: DescriptorBag, for client: ClientConnection) -> Bool {
        let cost = ClientQueues.cost(of: packet, descriptors: descriptors.count)
        let bound = configuration.limits.clientQueueBytes
        guard client.outbound.isEmpty || client.queuedBytes + cost <= bound else {
            descriptors.closeAll()
            log.warning("client \(client.id) (pid \(client.credentials.pid), uid \(client.credentials.uid)) is not reading: \(client.queuedBytes + cost) bytes would wait for it (limits.clientQueueBytes: \(bound)); disconnecting it")
            clients.queues.overflows += 1
            closeClient(client)
            return false
        }
        client.outbound.append((packet, descriptors))
        client.queuedBytes += cost
        clients.queues.totalBytes += cost
        if clients.queues.totalBytes > configuration.limits.totalQueueBytes, let largest = clients.values.max(by: { $0.queuedBytes < $1.queuedBytes }) {
            log.warning("\(clients.queues.totalBytes) bytes wait for clients that are not reading (limits.totalQueueBytes: \(configuration.limits.totalQueueBytes)); disconnecting client \(largest.id) (pid \(largest.credentials.pid), uid \(largest.credentials.uid)), which has \(largest.queuedBytes)")
            clients.queues.overflows += 1
            closeClient(largest)
            return largest !== client
        }
        return true
    }

    /// The first queued frame went out.
    func dequeueFirst(of client: ClientConnection) {
        let (packet, descriptors) = client.outbound.removeFirst()
        let cost = ClientQueues.cost(of: packet, descriptors: descriptors.count)
        client.queuedBytes -= cost
        clients.queues.totalBytes -= cost
    }

    /// Drops a closed client's queue.
    func discardQueue(of client: ClientConnection) {
        let freed = client.queuedBytes
        for (_, descriptors) in client.outbound { descriptors.closeAll() }
        client.outbound.removeAll()
        clients.queues.totalBytes -= freed
        client.queuedBytes = 0
        // A queue of many frames leaves the heap full of holes glibc keeps for itself.
        if freed >= ClientQueues.trimThreshold { releaseFreeHeapMemory() }
    }
}

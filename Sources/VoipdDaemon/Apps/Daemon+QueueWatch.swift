import VoipdLifecycle
import VoipdSystem
import VoipdVocabulary

/// Seed 004's second fate of an ordinary socket: "if the kernel runs out of buffer space, it
/// simply kills the socket, and on return the delegate reports an error". While an app is
/// suspended voipd watches its ordinary TCP sockets (duplicates, edge-triggered), and one
/// whose receive queue reaches `reclaimQueuedBytes` is reset (``Socket/disconnect(_:)``):
/// what it queued is freed, the peer gets a RST, and on resume the app's read fails with
/// `ECONNRESET`, the seed's error, and it connects again. VoIP sockets are never watched;
/// a datagram socket is not either, as the kernel already drops what does not fit in it.
extension Daemon {
    /// The app's stop was confirmed, or it was resumed or ended: watching starts or stops.
    func suspensionChanged(_ app: AppRecord, from: AppState, to: AppState) {
        if from == .suspended { stopWatchingQueues(of: app) }
        if to == .suspended { watchQueues(of: app) }
    }

    /// Watches the app's ordinary TCP sockets (after its stop, or an in-place upgrade).
    func watchQueues(of app: AppRecord) {
        guard let limit = configuration.reclaimQueuedBytes else { return }
        var count = 0
        var skipped = 0
        forEachOrdinarySocket(of: app) { target, copy, kind, inode in
            guard kind.type == Socket.streamType, !kind.isListening, !app.reclaimedInodes.contains(inode) else { return }
            guard count < QueueWatches.perApp else { return skipped += 1 }
            let watched = WatchedQueue(id: queueWatches.makeID(), app: app.id, target: target, descriptor: copy, kind: kind, inode: inode)
            do {
                watched.token = try loop.register(watched.descriptor, [.readable, .readHangup, .edgeTriggered], .watchedQueue(watched.id))
            } catch {
                return log.warning("\(app.name): fd \(target) not watched: \(error)")
            }
            queueWatches.insert(watched)
            count += 1
            // What waits already counts: the next arrival may be the last the buffer takes.
            checkQueue(watched, limit: limit)
        }
        if skipped > 0 { log.notice("\(app.name): \(skipped) more sockets not watched (at most \(QueueWatches.perApp))") }
    }

    private func stopWatchingQueues(of app: AppRecord) {
        for watched in queueWatches.watched(of: app.id) { stopWatching(watched) }
    }

    private func stopWatching(_ watched: WatchedQueue) {
        loop.deregister(watched.descriptor, token: watched.token)
        queueWatches.remove(watched)
    }

    /// Data or a hang-up on a watched socket.
    func watchedQueueEvent(_ id: UInt64, _ events: EpollEvents) {
        guard let watched = queueWatches.byID[id] else { return }
        guard let limit = configuration.reclaimQueuedBytes, events.intersection([.readHangup, .hangup, .error]).isEmpty else {
            // Nothing more can arrive (or the limit was taken away): nothing to watch.
            return stopWatching(watched)
        }
        checkQueue(watched, limit: limit)
    }

    private func checkQueue(_ watched: WatchedQueue, limit: Int) {
        let queue: ReceiveQueue
        do {
            queue = try Socket.receiveQueue(of: watched.descriptor)
        } catch {
            log.debug("\(watched.app): fd \(watched.target) not watched further: \(error)")
            return stopWatching(watched)
        }
        guard queue.chargedBytes >= limit, let app = apps[watched.app] else { return }
        defer { stopWatching(watched) }
        do {
            try Socket.disconnect(watched.descriptor)
        } catch {
            return log.warning("\(app.name): cannot reset fd \(watched.target) (\(watched.kind.name)): \(error)")
        }
        app.reclaimedInodes.insert(watched.inode)
        app.reclaimedSockets += 1
        metrics.reclaimedSockets += 1
        log.info("\(app.name): reset fd \(watched.target) (\(watched.kind.name)): \(queue.chargedBytes) bytes queued while suspended, "
                 + "at least reclaimQueuedBytes (\(limit)); the app reads ECONNRESET")
    }
}

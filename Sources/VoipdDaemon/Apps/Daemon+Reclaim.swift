import Glibc
import VoipdLifecycle
import VoipdSystem

/// Socket reclaim (TN2277): a suspended app's ordinary network sockets are made unusable,
/// as iOS did on lock and under pressure. VoIP sockets are never touched, nor local
/// (Unix-domain) sockets such as the app's connection to voipd, nor pipes or files.
extension Daemon {
    /// Takes a duplicate of each of the app's descriptors (`pidfd_getfd`) and shuts down
    /// every network socket that is not a held VoIP socket: the app's next read reports
    /// end-of-file, its writes fail with EPIPE, the peer sees the connection end, and a
    /// listening socket refuses new connections. Returns how many were reclaimed.
    @discardableResult
    func reclaimSockets(of app: AppRecord, reason: String) -> Int {
        guard let process = app.process else { return 0 }
        var protected = Set<UInt64>()
        var reclaimed: [String] = []
        do {
            for held in registry.sockets(of: app.name) { protected.insert(try Socket.inode(of: held.descriptor)) }
        } catch {
            // Without every held socket's identity, one of them could be taken for an ordinary socket.
            log.warning("\(app.name): no socket reclaimed: \(error)")
            return 0
        }
        for target in ProcFS.descriptors(of: process.pid) {
            guard let copy = duplicate(target, of: app) else { continue }
            let kind: SocketKind
            let inode: UInt64
            do {
                guard let found = try Socket.kind(of: copy), found.isNetwork else { continue }
                kind = found
                inode = try Socket.inode(of: copy)
            } catch {
                log.debug("\(app.name): fd \(target) not looked at: \(error)")
                continue
            }
            guard !protected.contains(inode), !app.reclaimedInodes.contains(inode) else { continue }
            do {
                try Socket.shutdownBoth(copy)
            } catch .socketNotConnected where !kind.isListening {
                // An unconnected datagram socket has nothing to end.
                continue
            } catch {
                log.warning("\(app.name): cannot reclaim fd \(target) (\(kind.name)): \(error)")
                continue
            }
            app.reclaimedInodes.insert(inode)
            reclaimed.append("fd \(target) (\(kind.name)\(kind.isListening ? ", listening" : ""))")
        }
        app.reclaimedSockets += reclaimed.count
        metrics.reclaimedSockets += reclaimed.count
        if !reclaimed.isEmpty {
            log.info("\(app.name): reclaimed \(reclaimed.count) sockets (\(reason)): \(reclaimed.joined(separator: ", "))")
        }
        return reclaimed.count
    }

    /// A duplicate of the app process's descriptor `target` (`pidfd_getfd`); nil when the app
    /// closed it since it was listed (EBADF) or it is not voipd's to take (EPERM).
    private func duplicate(_ target: CInt, of app: AppRecord) -> FileDescriptor? {
        guard let process = app.process else { return nil }
        do {
            return try process.pidfd.duplicateDescriptor(target)
        } catch {
            log.debug("\(app.name): fd \(target) not looked at: \(error)")
            return nil
        }
    }
}

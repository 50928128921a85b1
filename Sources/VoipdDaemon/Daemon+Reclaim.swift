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
        for held in registry.sockets(of: app.name) {
            if let inode = try? Socket.inode(of: held.descriptor.rawValue) { protected.insert(inode) }
        }
        var reclaimed: [String] = []
        for target in ProcFS.descriptors(of: process.pid) {
            guard let copy = try? process.pidfd.duplicateDescriptor(target) else { continue }
            guard let kind = try? Socket.kind(of: copy.rawValue), kind.isNetwork,
                  let inode = try? Socket.inode(of: copy.rawValue),
                  !protected.contains(inode), !app.reclaimedInodes.contains(inode) else { continue }
            do {
                try Socket.shutdownBoth(copy.rawValue)
            } catch let error as Errno where error.rawValue == ENOTCONN && !kind.isListening {
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
}

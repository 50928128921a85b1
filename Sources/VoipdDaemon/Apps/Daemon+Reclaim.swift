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
        var reclaimed: [String] = []
        forEachOrdinarySocket(of: app) { target, copy, kind, inode in
            if let name = reclaim(copy, target: target, kind: kind, inode: inode, of: app) { reclaimed.append(name) }
        }
        if !reclaimed.isEmpty {
            log.info("\(app.name): reclaimed \(reclaimed.count) sockets (\(reason)): \(reclaimed.joined(separator: ", "))")
        }
        return reclaimed.count
    }

    /// Shuts down one of the app's sockets, through voipd's duplicate of it, and counts it;
    /// returns how the log names it, or nil when there was nothing to end.
    func reclaim(_ copy: borrowing FileDescriptor, target: CInt, kind: SocketKind, inode: UInt64, of app: AppRecord) -> String? {
        guard !app.reclaimedInodes.contains(inode) else { return nil }
        do {
            try Socket.shutdownBoth(copy)
        } catch .socketNotConnected where !kind.isListening {
            // An unconnected datagram socket has nothing to end.
            return nil
        } catch {
            log.warning("\(app.name): cannot reclaim fd \(target) (\(kind.name)): \(error)")
            return nil
        }
        app.reclaimedInodes.insert(inode)
        app.reclaimedSockets += 1
        metrics.reclaimedSockets += 1
        return "fd \(target) (\(kind.name)\(kind.isListening ? ", listening" : ""))"
    }

    /// Calls `body` with a duplicate (`pidfd_getfd`) of each network socket of the app's
    /// process that is not a held VoIP socket (found by its /proc links first), with its descriptor number in the app, its
    /// kind and its inode. Nothing when a held socket's identity cannot be read: one of them
    /// could then be taken for an ordinary socket.
    func forEachOrdinarySocket(of app: AppRecord, _ body: (CInt, consuming FileDescriptor, SocketKind, UInt64) -> Void) {
        guard let process = app.process else { return }
        var protected = Set<UInt64>()
        do {
            for held in registry.sockets(of: app.id) { protected.insert(try Socket.inode(of: held.descriptor)) }
        } catch {
            return log.warning("\(app.name): its sockets are left alone: \(error)")
        }
        // The links first (`socket:[INODE]`) and each socket's protocol name: a copy is taken
        // only of a socket that may be a network one and is not held, not of every
        // descriptor (this runs at every suspension).
        let scan: SocketDescriptorScan.Result
        do {
            scan = try SocketDescriptorScan.scan(process.pid, limit: Int.max)
        } catch {
            return log.debug("\(app.name): its descriptors not looked at: \(error)")
        }
        for entry in scan.sockets where !protected.contains(entry.inode) && !Self.isLocal(entry.protocolName) {
            let target = entry.location.descriptor
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
            // The descriptor may have been closed and reused since the scan: the copy decides.
            guard !protected.contains(inode) else { continue }
            body(target, copy, kind, inode)
        }
    }

    /// Whether the kernel's name of a socket's protocol says it is local (Unix-domain,
    /// netlink): never an ordinary network socket. An unknown name is looked at.
    private static func isLocal(_ protocolName: String?) -> Bool {
        guard let protocolName else { return false }
        return protocolName.hasPrefix("UNIX") || protocolName == "NETLINK"
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

import FoundationEssentials
import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// In-place upgrade, as nginx upgrades its binary: voipd writes what it knows to a memfd,
/// keeps its descriptors open across exec, and executes its program file again (the new
/// version, if a package replaced it). The pid does not change, so apps stay its children,
/// connections stay connected, suspended apps stay suspended, and held sockets stay held.
extension Daemon {
    /// `upgrade` (type 23): done between two turns of the loop; the new program replies.
    func upgradeRequest(_ request: EmptyRequest, from client: ClientConnection) throws {
        guard client.credentials.uid == 0 || client.credentials.uid == geteuid() else {
            throw ProtocolError(.permissionDenied, "only root or uid \(geteuid()) may upgrade voipd")
        }
        persistence.pendingUpgrade = PendingReply(client: client.id, request: request.id)
    }

    /// After a turn that read an `upgrade` request or SIGUSR2 (one upgrade serves both).
    /// Not once that turn read SIGTERM or SIGINT too: the new program would not know it had
    /// been asked to stop (the signal is read), and would serve on, until the service manager
    /// gave up waiting and killed it, its suspended apps left stopped. voipd stops instead;
    /// the requester is told before its connection closes.
    func upgradeIfAsked() {
        let requester = persistence.pendingUpgrade
        guard requester != nil || persistence.upgradeBySignal else { return }
        persistence.pendingUpgrade = nil
        persistence.upgradeBySignal = false
        guard running else {
            log.notice("upgrade not performed: voipd is stopping")
            if let requester, let client = clients[requester.client] {
                sendError(ProtocolError(.invalidState, "voipd is stopping: not upgraded"), request: requester.request, to: client)
            }
            return
        }
        performUpgrade(requestedBy: requester)
    }

    /// Executes voipd again, carrying everything over. On failure voipd keeps running as it
    /// was, and says why.
    func performUpgrade(requestedBy requester: PendingReply?) {
        settleWakeBookkeeping()
        drainDeferredInputs()
        endPageOutsBeforeUpgrade()
        flushBroadcasts()
        for client in clients.values {
            flush(client)
            queueListing(of: client)
        }
        // The agents would outlive their pidfds as zombies: ended first (their attempts go on
        // in the new program's agents, from the partial files); one that does not end in
        // time is carried over, to be reaped when it ends.
        transfers?.service.endAgentsBeforeExec { agent in endingAgents.add(agent, loop: loop, log: log) }
        let snapshot = makeSnapshot(requester: requester)
        let failure: String
        var connectionsAside = false
        do {
            guard let program = currentExecutablePath() else { throw Errno(ENOENT, call: "readlink(/proc/self/exe)") }
            let state = try writeSnapshot(snapshot)
            // Carried across the exec, and only for it: close-on-exec again if it fails.
            try state.setCloseOnExec(false)
            try forEachCarriedDescriptor { descriptor throws(Errno) in try descriptor.setCloseOnExec(false) }
            defer {
                do {
                    try forEachCarriedDescriptor { descriptor throws(Errno) in try descriptor.setCloseOnExec() }
                } catch {
                    log.error("cannot make the descriptors close-on-exec again: \(error)")
                }
            }
            log.notice("upgrading in place: executing \(program) with \(snapshot.apps.count) apps, \(snapshot.clients.count) connections, \(snapshot.heldSockets.entries.count) held sockets")
            notifier.notify(["RELOADING=1", "STATUS=upgrading in place"])
            // The service manager's descriptors were taken at the first start; they must not be again.
            let environment = currentEnvironment().filter { !$0.hasPrefix("LISTEN_") }
            // The carried set holds the held sockets alone, as every program expects it.
            connectionsAside = true
            for client in clients.values { try loop.setConnectionAside(client.descriptor, token: client.token) }
            try executeProgram(program, arguments: [program] + persistence.arguments + ["--upgrade-from", "\(state.rawValue)"], environment: environment)
        } catch {
            failure = "\(error)"
        }
        log.error("upgrade failed, still running the old program: \(failure)")
        if connectionsAside { putConnectionsBack() }
        transfers?.service.execFailed()
        transfersChanged()
        notifier.notify(["READY=1", "STATUS=\(statusLine)"])
        if let requester, let client = clients[requester.client] {
            sendError(ProtocolError(.internalError, "upgrade failed: \(failure)"), request: requester.request, to: client)
        }
    }

    /// The connections in the loop's set again after a failed exec (one that was not set
    /// aside is there already: EEXIST).
    private func putConnectionsBack() {
        for client in clients.values {
            let events: EpollEvents = client.listing != nil ? [.writable] : client.outbound.isEmpty ? [.readable] : [.readable, .writable]
            do {
                try loop.putConnectionBack(client.descriptor, events, token: client.token)
            } catch where error == .fileExists {
                continue
            } catch {
                log.warning("client \(client.id): cannot watch its connection again after the failed upgrade: \(error); disconnecting it")
                closeClient(client)
            }
        }
    }

    /// The snapshot in a memfd, read from its start by the new program.
    private func writeSnapshot(_ snapshot: DaemonSnapshot) throws -> FileDescriptor {
        let file = try FileDescriptor.memoryFile(named: "voipd-upgrade")
        let encoder = JSONEncoder()
        // The held sockets' records are base64, whose slashes need no escaping (and unescaped,
        // the new program's decoder reads the string as it is).
        encoder.outputFormatting = .withoutEscapingSlashes
        try file.writeAll(encoder.encode(snapshot))
        try file.rewind()
        return file
    }

    /// Every descriptor an upgrade carries over to the new program, lent to `body` by its owner.
    private func forEachCarriedDescriptor(_ body: (borrowing FileDescriptor) throws(Errno) -> Void) throws(Errno) {
        try body(clients.listener)
        try body(loop.heldSet.descriptor)
        if let stateFile = persistence.stateFile { try body(stateFile.lock) }
        for client in clients.values {
            try body(client.descriptor)
            for (_, descriptors) in client.outbound { try descriptors.forEach(body) }
        }
        for held in registry.all { try body(held.descriptor) }
        try endingAgents.forEach(body)
        for app in apps.values {
            if let process = app.process { try body(process.pidfd.descriptor) }
            if let launch = app.launch { try launch.forEachOutput(body) }
        }
    }

    func makeSnapshot(requester: PendingReply?) -> DaemonSnapshot {
        DaemonSnapshot(
            listener: clients.listener.rawValue, stateLock: persistence.stateFile?.lock.rawValue,
            stateFileWritten: persistence.stateFile.flatMap {
                $0.isStale ? nil : DaemonSnapshot.WrittenStateFile(path: $0.path, processes: Array($0.recorded), socketsChanged: Array($0.socketsChanged))
            },
            clientTable: clients.state, persistence: persistence.state, locked: locked,
            clients: clients.values.map(DaemonSnapshot.Client.init),
            apps: apps.values.map(DaemonSnapshot.App.init),
            eventLoop: EventLoop.Carried(urgentSet: loop.heldSet.descriptor.rawValue, nextToken: loop.nextToken),
            heldSockets: HeldSocketTable(registry.all),
            // Not a stop's deadline: the new program sets it again for each app still
            // suspending (``restore(_:)``, through ``noteStopAwaited(_:)``), and a program
            // older than that timer could not read its kind and would refuse the snapshot.
            timers: timers.all.compactMap { timer in
                if case .stopDeadline = timer.key { return nil }
                return DaemonSnapshot.Timer(key: timer.key, deadline: timer.deadline, tolerance: timer.tolerance)
            },
            events: events.records, metrics: metrics,
            endingAgents: endingAgents.descriptors, requester: requester)
    }

    /// The new program's side: takes over what the snapshot describes.
    func restore(_ snapshot: DaemonSnapshot) throws {
        // Every carried descriptor close-on-exec again, in one call rather than an fcntl each
        // (10,000 held sockets): whatever this program has open from 3 up is its own, made
        // close-on-exec, or carried.
        let adoptCarried: (CInt) throws(Errno) -> FileDescriptor
        do {
            try FileDescriptor.setCloseOnExec(from: 3)
            adoptCarried = { number throws(Errno) in number < 3 ? try Self.adoptCarried(number) : FileDescriptor(adopting: number) }
        } catch {
            log.info("each carried descriptor made close-on-exec on its own: \(error)")
            adoptCarried = Self.adoptCarried
        }
        clients.state = snapshot.clientTable
        locked = snapshot.locked
        for record in snapshot.events { events.append(record) }
        metrics = snapshot.metrics
        for saved in snapshot.clients {
            let client = try ClientConnection(carried: saved, adopting: adoptCarried)
            client.token = try loop.register(client.descriptor, client.outbound.isEmpty ? [.readable] : [.readable, .writable],
                                             .client(client.id))
            clients[client.id] = client
            clients.queues.totalBytes += client.queuedBytes
        }
        clients.followers = clients.followers.filter { clients[$0] != nil }
        for saved in snapshot.apps {
            let app = try AppRecord(carried: saved, adopting: adoptCarried)
            if app.client.map({ clients[$0] == nil }) ?? false { app.client = nil }
            if let process = app.process {
                // Level-triggered: a process that ended during the exec is seen at once.
                try watch(process, of: app)
                // Its cgroup's descriptors did not survive the exec: opened again where the old
                // program had it, whatever this program's configuration says (one configured for
                // signals or another directory would otherwise send SIGCONT to a frozen app,
                // which thaws nothing), if the kernel's record still puts it there; or found
                // in this program's freezer directory.
                if let carried = saved.processCgroup {
                    process.cgroup = openCgroup(carried.path, version: carried.version, holding: process.pid, of: app.name)
                }
                attachCgroup(to: process, of: app)
                // The old program's evidence of its confirmed SIGSTOP is not carried: taken
                // again, so that a SIGCONT not voipd's is noticed as before (a child's is the
                // kernel's continued report, which one sent during the exec left too).
                if app.lifecycle.phase == .suspended && process.cgroup == nil { process.stopEvidence = StopEvidence(stopped: process) }
            }
            apps[app.id] = app
        }
        for number in snapshot.endingAgents ?? [] {
            guard let agent = PidFd(adoptingUnknown: try adoptCarried(number)) else {
                log.error("transfers: the carried pidfd \(number) of an ending agent names no process")
                continue
            }
            endingAgents.add(agent, loop: loop, log: log)
        }
        var carried: [HeldSocket] = []
        carried.reserveCapacity(snapshot.heldSockets.entries.count)
        loop.reserveCapacity(registrations: snapshot.heldSockets.entries.count)
        for saved in snapshot.heldSockets.entries {
            let held = HeldSocket(state: saved.state, socketKind: saved.socketKind, descriptor: try adoptCarried(saved.descriptor))
            // Anything the old program was told of and had not handled is told again.
            held.arrivedSinceReport = true
            // Still registered in the carried set: its registration is only claimed.
            try loop.adoptHeldSocket(token: saved.token, id: held.id)
            held.token = saved.token
            registry.reserve(below: held.id + 1)
            carried.append(held)
        }
        registry.insert(listed: carried)
        if let written = snapshot.stateFileWritten, let stateFile = persistence.stateFile, stateFile.path == written.path,
           let socketsChanged = written.socketsChanged {
            stateFile.isStale = false
            stateFile.recorded = Set(written.processes)
            stateFile.socketsChanged = Set(socketsChanged)
        }
        let unknownTimers = snapshot.timers.filter { $0.key == nil }.count
        if unknownTimers > 0 {
            log.warning("the old program carried \(unknownTimers) timer\(unknownTimers == 1 ? "" : "s") of a kind this program does not know: dropped")
        }
        for timer in snapshot.timers {
            guard let key = timer.key, key != .serviceWatchdog else { continue }
            timers.set(key, deadline: timer.deadline, tolerance: timer.tolerance)
        }
        log.notice("upgraded in place: \(apps.count) apps, \(clients.count) connections, \(registry.count) held sockets carried over")
        // Reading the snapshot took tens of MB with many held sockets (the text, the
        // decoder's map of it), all free now: given back, not kept for the life of the program.
        releaseFreeHeapMemory()
        for app in apps.values {
            // Sockets armed before the exec: anything that came meanwhile wakes the app now.
            if registry.sockets(of: app.id).contains(where: \.armed) { arm(app) }
            // The duplicates of its ordinary sockets were closed by the exec.
            if app.lifecycle.phase == .suspended { watchQueues(of: app) }
            if app.lifecycle.phase == .suspending {
                // The old program's stop may not have been confirmed: reports on, and a look now.
                noteStopAwaited(app)
                checkStop(app)
            }
        }
        if let requester = snapshot.requester, let client = clients[requester.client] {
            reply(requester.request, UpgradeResult(pid: getpid(), apps: apps.count, heldSockets: registry.count), to: client)
        }
    }

    /// Takes ownership of a descriptor the old program carried over, close-on-exec again.
    private static func adoptCarried(_ number: CInt) throws(Errno) -> FileDescriptor {
        let descriptor = FileDescriptor(adopting: number)
        try descriptor.setCloseOnExec()
        return descriptor
    }
}

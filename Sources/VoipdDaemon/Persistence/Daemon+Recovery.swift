import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// The state file: what this voipd writes down about its apps, and what it takes back at
/// start from one that died (``RecoveryState``).
extension Daemon {
    /// Opens the state file's directory (the configured one, else the control socket's) and
    /// takes the state file's lock, or adopts `carriedLock`, the lock an in-place upgrade
    /// carried over. A directory someone other than root or voipd's user could write is
    /// refused, and voipd runs without a state file, saying so. A lock another voipd holds
    /// is ``StateFileInUse``: that voipd still runs, and this one must not start beside it
    /// (it is taken before the control socket is bound, so that the other's stays).
    static func openStateFile(_ configuration: DaemonConfiguration, log: Logger, carriedLock: CInt? = nil) throws -> StateFile? {
        let directory: String
        switch configuration.stateDirectory {
        case "":
            log.info("no state file (stateDirectory is \"\"): apps a crash of voipd leaves stopped stay stopped unless a service manager's store has them")
            return nil
        case let configured?:
            directory = configured
        case nil:
            let parent = parentDirectory(of: configuration.socketPath)
            directory = parent.isEmpty ? "/" : parent
        }
        do {
            return try lockedStateFile(in: directory, name: StateFile.name(forSocket: configuration.socketPath), carriedLock: carriedLock)
        } catch let error as StateFileInUse {
            throw error
        } catch {
            log.error("""
                no state file, so apps a crash of voipd leaves stopped cannot be resumed by the next voipd: \(error); \
                set stateDirectory to a directory only root or uid \(geteuid()) can write
                """)
            return nil
        }
    }

    /// The state file `name` in `path`, with its lock: the carried one, else taken now.
    private static func lockedStateFile(in path: String, name: String, carriedLock: CInt?) throws -> StateFile {
        // Owned at once: closed if the file is not kept.
        var carried = carriedLock.map(FileDescriptor.init(adopting:))
        let directory = try TrustedDirectory(path: path)
        if let lock = carried.take() {
            try lock.setCloseOnExec()
            return StateFile(directory: directory, name: name, lock: lock)
        }
        let lockName = StateFile.lockName(for: name)
        guard let lock = try directory.lockExclusively(lockName, writing: Array("\(getpid())\n".utf8)) else {
            throw StateFileInUse(path: directory.path + "/" + name, lockPath: directory.path + "/" + lockName,
                                 holder: lockHolder(directory, lockName))
        }
        return StateFile(directory: directory, name: name, lock: lock)
    }

    /// The pid the lock file names, for the message that says who holds it.
    private static func lockHolder(_ directory: borrowing TrustedDirectory, _ lockName: String) -> String? {
        do {
            guard let content = try directory.read(lockName, limit: 64) else { return nil }
            let digits = String(decoding: content.prefix { (0x30...0x39).contains($0) }, as: UTF8.self)
            return digits.isEmpty ? nil : digits
        } catch {
            // Only the message needs it: a file that cannot be read names no one.
            return nil
        }
    }

    /// Something the state file records changed: it is written at the end of this turn of
    /// the loop, or a second after the last write if that was less than a second ago (each
    /// write costs as much as all the apps: a burst of changes is written once a second),
    /// or at once before one of the processes it does not name yet is stopped.
    func noteStateChange() {
        persistence.stateFile?.isStale = true
    }

    /// At the end of a turn of the loop: writes the state file if it changed, unless it was
    /// written less than a second ago; then a timer writes it when the second is over. (A
    /// timer for every change would wake voipd once more for each; this one only for bursts.)
    func saveStateIfDue() {
        guard let stateFile = persistence.stateFile, stateFile.isStale, !timers.contains(.saveState) else { return }
        if let last = stateFile.lastWritten, now - last < StateFile.coalescing {
            timers.set(.saveState, deadline: last + StateFile.coalescing)
        } else {
            saveStateIfChanged()
        }
    }

    /// An app's held sockets changed (one held or let go): the state file's list of them is
    /// written before its process is next stopped, not now (a burst of registrations at
    /// start would write it for each; only a stopped app's list is ever used).
    func noteSocketsChanged(of app: AppID) {
        persistence.stateFile?.socketsChanged.insert(app)
    }

    /// Writes the state file now if `process`, about to be stopped, is not in it, or the
    /// app's held sockets changed since it was written: the next voipd keeps a process it
    /// finds stopped so only if it gets back every socket the file lists. A process it names
    /// with its sockets is stopped without a write: whatever else changed can wait (a
    /// process the next voipd finds stopped was in the background, whatever the file says).
    func saveStateUnlessRecorded(_ process: AppProcess, of app: AppRecord) {
        guard let stateFile = persistence.stateFile else { return }
        if let identity = process.identity, stateFile.recorded.contains(identity), !stateFile.socketsChanged.contains(app.id) { return }
        stateFile.isStale = true
        saveStateIfChanged()
    }

    /// Writes the state file if something it records changed. Never on the wake path: a
    /// wake and the stop after it change nothing the file records.
    func saveStateIfChanged() {
        guard let stateFile = persistence.stateFile, stateFile.isStale else { return }
        timers.cancel(.saveState)
        stateFile.lastWritten = now
        do {
            try stateFile.save(recoveryState())
            if stateFile.failing { log.notice("the state file \(stateFile.path) is written again") }
            stateFile.failing = false
        } catch {
            // Tried again a second later; logged once.
            if !stateFile.failing { log.error("cannot write the state file \(stateFile.path): \(error) (further failures not logged)") }
            stateFile.failing = true
        }
    }

    /// What the state file records: every app with a process or a way to start it.
    func recoveryState() -> RecoveryState {
        var entries: [RecoveryState.App] = []
        for app in apps.values.sorted(by: { $0.name < $1.name }) where app.process != nil || app.launch != nil {
            var recorded: RecoveryState.Process?
            if let process = app.process {
                if process.identity == nil { process.identity = process.pidfd.identity() }
                let suspension = process.cgroup.map { RecoveryState.Suspension.cgroup(path: $0.cgroup.path, version: $0.cgroup.version) } ?? .signal
                recorded = process.identity.map {
                    RecoveryState.Process(identity: $0, leadsGroup: process.signalsGroup, suspension: suspension)
                }
            }
            let state = app.lifecycle.state
            entries.append(RecoveryState.App(name: app.name, record: storedRecord(of: app), process: recorded,
                                             foreground: state == .active || state == .inactive,
                                             sockets: recorded == nil ? nil : recordedSockets(of: app)))
        }
        return RecoveryState(bootID: persistence.bootID, apps: entries)
    }

    /// The app's held sockets for the state file; nil if the inode of one cannot be read
    /// (a list without it would let the next voipd keep the app stopped with a socket
    /// nobody watches).
    private func recordedSockets(of app: AppRecord) -> [RecoveryState.Socket]? {
        var sockets: [RecoveryState.Socket] = []
        for held in registry.sockets(of: app.id) {
            guard let inode = held.inode else { return nil }
            sockets.append(RecoveryState.Socket(name: held.name, kind: held.kind, origin: held.origin, inode: inode))
        }
        return sockets
    }

    /// What a previous voipd wrote down, if it can be trusted and is of this boot.
    func loadStateFile() -> RecoveryState? {
        guard let stateFile = persistence.stateFile else { return nil }
        let state: RecoveryState
        do {
            guard let loaded = try stateFile.load() else { return nil }
            state = loaded
        } catch {
            log.warning("ignoring the state file \(stateFile.path): \(error)")
            return nil
        }
        guard state.version == RecoveryState.currentVersion else {
            log.warning("ignoring the state file \(stateFile.path): version \(state.version), this voipd reads \(RecoveryState.currentVersion)")
            return nil
        }
        guard state.bootID == persistence.bootID else {
            log.info("ignoring the state file \(stateFile.path): written before the system last started")
            return nil
        }
        if state.skipped > 0 { log.warning("\(state.skipped) apps in the state file \(stateFile.path) could not be read; left out") }
        log.info("state file \(stateFile.path): \(state.apps.count) apps recorded by voipd pid \(state.writer)")
        return state
    }

    /// Takes back the apps a previous voipd wrote down: their records, then their processes
    /// that are still the same processes; those it left stopped are kept so or resumed once
    /// the held sockets are back. Comes after the service manager's store, whose pidfds no
    /// pid reuse can fool.
    func takeBackRecordedApps(_ state: RecoveryState) {
        for entry in state.apps { takeBack(entry) }
    }

    private func takeBack(_ entry: RecoveryState.App) {
        do {
            try Self.validateName(entry.name, what: "app")
        } catch {
            return log.warning("state file: skipping an app: \(error)")
        }
        let app: AppRecord
        if let existing = apps[AppID(entry.name)] {
            app = existing
        } else if let manifest = apps.manifests[AppID(entry.name)] {
            // The manifest says what the app is now.
            app = record(for: manifest)
        } else {
            app = entry.record.appRecord(named: entry.name, lifecycle: newLifecycle(policy: entry.record.policy))
            apps[AppID(entry.name)] = app
        }
        // The state file's is the later: it is written again whenever anything changes.
        if let keepAlive = entry.record.keepAlive { app.recordedKeepAlive = keepAlive }
        guard let recorded = entry.process, app.process == nil else { return }
        guard let process = survivingProcess(recorded, of: entry.name) else { return }
        adoptSurvivor(process, of: app, inBackground: !entry.foreground)
    }

    /// The recorded process, if it is still the same process and voipd may act on it: the
    /// same start time (a reused pid names another process), the same real uid, and
    /// voipd's own uid unless voipd runs as root.
    private func survivingProcess(_ recorded: RecoveryState.Process, of name: String) -> AppProcess? {
        let expected = recorded.identity
        let pid = expected.pid
        guard pid > 1, pid != getpid(), !apps.values.contains(where: { $0.process?.pid == pid }) else {
            log.warning("\(name): pid \(pid) from the state file is not an app's process to take back: left alone")
            return nil
        }
        let pidfd: PidFd
        do {
            pidfd = try PidFd(pid: pid)
        } catch {
            log.info("\(name): pid \(pid) from the state file has ended")
            return nil
        }
        guard let found = pidfd.identity() else {
            log.info("\(name): pid \(pid) from the state file has ended")
            return nil
        }
        guard found.startTime == expected.startTime else {
            log.warning("\(name): pid \(pid) is another process now (started at tick \(found.startTime), not \(expected.startTime)): left alone")
            return nil
        }
        guard found.uid == expected.uid else {
            log.warning("\(name): pid \(pid) runs as uid \(found.uid), not uid \(expected.uid) as recorded: left alone")
            return nil
        }
        guard geteuid() == 0 || found.uid == geteuid() else {
            log.warning("\(name): pid \(pid) belongs to uid \(found.uid); voipd runs as uid \(geteuid()): left alone")
            return nil
        }
        // Still the leader of its group, or it is signalled alone.
        let leadsGroup = recorded.leadsGroup && ProcFS.processGroup(of: pid) == pid
        let process = AppProcess(pidfd: pidfd, isChild: false, signalsGroup: leadsGroup)
        process.identity = found
        switch recorded.suspension {
        case .signal:
            break
        case .cgroup(let path, let version):
            // Frozen there, maybe: kept frozen or thawed there (adoptSurvivor), even by a voipd
            // configured for signals or another directory, and frozen there while it lives.
            process.cgroup = openCgroup(path, version: version, holding: pid, of: name)
            if process.cgroup == nil { log.info("\(name): pid \(pid) is no longer in its recorded cgroup \(path)") }
        }
        return process
    }

    /// Supervises again a process an earlier voipd supervised (found in the service
    /// manager's store or the state file): watched for its end, resumed if it was left
    /// running, and launched in the lifecycle's eyes, to connect again. One left stopped or
    /// frozen waits for ``keepOrResumeStoppedSurvivors(recorded:)``, once the held sockets are back.
    func adoptSurvivor(_ process: AppProcess, of app: AppRecord, inBackground: Bool) {
        attachCgroup(to: process, of: app)
        do {
            try watch(process, of: app)
        } catch {
            return releaseUnwatchedSurvivor(process, of: app, error)
        }
        app.process = process
        // Only a process really stopped is kept so ('t', a debugger's stop, is not ours).
        if suspender.isStopped(process) {
            // Left so, and not run, until voipd knows whether it can wake it.
            persistence.stoppedSurvivors.append(app.id)
            return
        }
        resumeSurvivor(process, of: app, inBackground: inBackground)
    }

    /// A survivor voipd cannot watch for its end (its pidfd refused by the epoll set: the
    /// user's epoll watches spent, no memory) is not supervised: voipd would never learn that
    /// it ended. Left stopped or frozen by the voipd that died, nothing would ever continue it:
    /// it is continued, and runs on unsupervised, its record as it was.
    private func releaseUnwatchedSurvivor(_ process: AppProcess, of app: AppRecord, _ error: any Error) {
        guard suspender.isStopped(process) else {
            return log.error("\(app.name): cannot watch pid \(process.pid) again: \(error); it runs on unsupervised")
        }
        do {
            try suspender.resume(process)
            log.error("\(app.name): cannot watch pid \(process.pid) again: \(error); it was stopped: resumed, and runs on unsupervised")
        } catch {
            log.error("\(app.name): cannot watch pid \(process.pid) again, and it was stopped, and cannot be resumed either: \(error)")
        }
    }

    /// After every process and held socket was taken back at start: a survivor left stopped
    /// or frozen stays so, suspended in the lifecycle's eyes, when voipd holds VoIP sockets
    /// of its app to wake it by, every one the state file lists for it (those the service
    /// manager's store did not give back are copied from the app's processes by their
    /// inodes: ``takeBackSockets(_:of:from:)``). Its tasks never run across voipd's restart:
    /// it is woken by data, and connects again then. One with none, or without one of its
    /// sockets, would sleep through what arrives on it (a call), and is resumed: it connects
    /// again and registers its sockets. So is one with events waiting for it (a transfer's
    /// results), to take them.
    func keepOrResumeStoppedSurvivors(recorded: RecoveryState?) {
        let found = persistence.stoppedSurvivors
        persistence.stoppedSurvivors = []
        defer { persistence.socketsNotTakenBack = [:] }
        for id in found {
            guard let app = apps[id], let process = app.process else { continue }
            var missing = persistence.socketsNotTakenBack[app.id] ?? []
            if let listed = recorded?.sockets(app: app.name, process.pidfd) {
                missing = takeBackSockets(listed.filter { registry.socket(app: app.id, name: $0.name) == nil }, of: app, from: process)
            }
            let held = registry.count(of: app.id)
            guard held > 0, missing.isEmpty, app.lifecycle.outbox.isEmpty else {
                if !missing.isEmpty {
                    log.warning("\(app.name): pid \(process.pid) was left suspended, but voipd could not get back its VoIP sockets \(missing.joined(separator: ", ")): resumed, to register them again")
                }
                resumeSurvivor(process, of: app, inBackground: true)
                continue
            }
            let how = process.cgroup.map { "frozen in \($0.cgroup.path): kept frozen" } ?? "stopped: kept stopped"
            log.notice("\(app.name): pid \(process.pid) still running from before voipd started, \(how); its \(held) held sockets wake it")
            // What shows later that someone else's SIGCONT resumed it (``noticeUnexpectedResume(of:restop:)``).
            if process.cgroup == nil { process.stopEvidence = StopEvidence(stopped: process) }
            // Its keep-alive goes on: it asked the voipd that died, and cannot ask again before
            // it runs. One longer than any request may set is not voipd's own record.
            let keepAlive = app.recordedKeepAlive.flatMap { $0.interval <= .seconds(Self.longestKeepAlive) * configuration.timeScale ? $0 : nil }
            app.recordedKeepAlive = nil
            let reason = process.cgroup == nil ? "found stopped when voipd started" : "found frozen when voipd started"
            let outcome = feed(app, .takenBackSuspended(reason: reason, keepAlive: keepAlive))
            if case .rejected(let why) = outcome.reply {
                // Left so, nothing would ever wake it.
                log.warning("\(app.name): pid \(process.pid) cannot be taken back suspended (\(why)): resumed")
                process.stopEvidence = nil
                resumeSurvivor(process, of: app, inBackground: true)
            } else if keepAlive != nil {
                // The store's record says what this voipd does: the interval raised to its
                // minimum, the next keep-alive when it is now due.
                storeRecord(of: app)
            }
        }
    }

    /// Copies `sockets` (of those the state file lists, the ones voipd does not hold) from
    /// the app's processes, which still hold them (``SocketInodeSearch``), and holds them
    /// again under their names. Returns the names of those it could not get back: the app
    /// closed its descriptor (it gave voipd the only one), or voipd may not copy another
    /// process's descriptors (a voipd not root under Yama's ptrace_scope 1 or more).
    private func takeBackSockets(_ sockets: [RecoveryState.Socket], of app: AppRecord, from process: AppProcess) -> [String] {
        guard !sockets.isEmpty else { return [] }
        let limits = SocketDiscoveryLimits()
        let members: [pid_t]
        do {
            members = try process.members(limit: limits.processes).processes
        } catch {
            // Its cgroup cannot be read, or it has just ended: the process alone.
            members = [process.pid]
        }
        var byInode: [UInt64: RecoveryState.Socket] = [:]
        for socket in sockets { byInode[socket.inode] = socket }
        var names: [String] = []
        let outcome = SocketInodeSearch.copies(of: Set(byInode.keys), in: members, root: process.pidfd, descriptorLimit: limits.descriptors) { inode, copy in
            guard let socket = byInode[inode] else { return }
            do {
                try hold(copy, app: app, name: socket.name, kind: socket.kind, origin: socket.origin)
                names.append(socket.name)
            } catch {
                log.warning("\(app.name): cannot hold \(socket.name) again: \(error)")
                byInode[inode] = nil
            }
        }
        if !names.isEmpty {
            log.info("\(app.name): holding VoIP sockets \(names.sorted().joined(separator: ", ")) again, copied from its processes")
        }
        if !outcome.errors.isEmpty { log.info("\(app.name): looking for its VoIP sockets: \(outcome.errors.joined(separator: "; "))") }
        let held = Set(names)
        return sockets.map(\.name).filter { !held.contains($0) }.sorted()
    }

    /// Resumes a survivor found stopped, and tells the lifecycle it was launched.
    private func resumeSurvivor(_ process: AppProcess, of app: AppRecord, inBackground: Bool) {
        // Only a process really stopped is continued ('t', a debugger's stop, is not ours).
        // voipd stops only apps in the background: one found stopped was there.
        let wasStopped = suspender.isStopped(process)
        var failure: (any Error)?
        if wasStopped {
            do {
                try suspender.resume(process)
            } catch Errno.noSuchProcess {
                // Ended: its end comes through its pidfd.
            } catch {
                failure = error
            }
        }
        let how = !wasStopped ? "" : failure.map { "; it was stopped, and cannot be resumed: \($0); it is ended instead" } ?? "; it was stopped: resumed"
        log.log(failure == nil ? .notice : .warning, "\(app.name): pid \(process.pid) still running from before voipd started\(how)")
        feed(app, .launched(inBackground: inBackground || wasStopped, reason: "still running when voipd started"))
        // Left stopped, it would be supervised as running and handle nothing.
        if let failure { feed(app, .resumeFailed("\(failure)")) }
    }
}

extension RecoveryState {
    /// The VoIP sockets the state file lists for the app's recorded process, if `pidfd` is
    /// that process and the list is known.
    func sockets(app name: String, _ pidfd: borrowing PidFd) -> [Socket]? {
        guard let entry = apps.first(where: { $0.name == name }), let recorded = entry.process,
              recorded.identity.pid == pidfd.pid, pidfd.identity() == recorded.identity else { return nil }
        return entry.sockets
    }

    /// The cgroup the app's recorded process was suspended in, if `pidfd` is that process.
    func cgroup(app name: String, _ pidfd: borrowing PidFd) -> (path: String, version: CgroupVersion)? {
        guard let recorded = apps.first(where: { $0.name == name })?.process, case .cgroup(let path, let version) = recorded.suspension,
              recorded.identity.pid == pidfd.pid, pidfd.identity() == recorded.identity else { return nil }
        return (path, version)
    }
}

extension StoredApp {
    /// What the service manager's store and the state file keep of an app; its keep-alive
    /// is next due at `keepAliveDue` (nil: not known).
    init(of app: AppRecord, keepAliveDue: MonotonicInstant?) {
        self.init(uid: app.uid, policy: app.lifecycle.policy, launch: app.launch?.command,
                  keepAlive: app.lifecycle.keepAliveInterval.map { RecordedKeepAlive(interval: $0, due: keepAliveDue) })
    }

    /// A record for the app this describes, not running (its output goes to voipd's own),
    /// with `lifecycle` (of the record's policy).
    func appRecord(named name: String, lifecycle: AppLifecycle) -> AppRecord {
        let app = AppRecord(name: name, uid: uid, lifecycle: lifecycle, since: wallClockSeconds())
        app.launch = launch.map { LaunchSpecification($0) }
        app.recordedKeepAlive = keepAlive
        return app
    }
}

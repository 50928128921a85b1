import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdProtocolIO
import VoipdVocabulary

/// Starting apps, and learning when they stop or end.
extension Daemon {
    func launch(_ request: LaunchRequest, descriptors: DescriptorBag, from client: ClientConnection) throws {
        // Refused before anything changes: an app's settings are not replaced by a launch
        // that will not happen (``start(_:inBackground:reason:)`` refuses it anyway).
        guard running else {
            throw Self.stopping(request.name ?? request.arguments?.first.map { String($0.split(separator: "/").last ?? "") } ?? "the app")
        }
        let caller = client.credentials
        let app: AppRecord
        var isNew = false
        if let arguments = request.arguments, !arguments.isEmpty {
            (app, isNew) = try adHocApp(request, arguments: arguments, descriptors: descriptors, caller: caller)
        } else {
            guard let name = request.name else { throw ProtocolError(.badRequest, "launch needs a command, or the name of an app manifest") }
            guard let manifest = apps.manifests[AppID(name)] else {
                if let error = apps.invalidManifests[AppID(name)] { throw ProtocolError(.launchFailed, "the manifest of \(name) is invalid: \(error)") }
                throw ProtocolError(.noSuchApp, "no manifest for \(name) in \(configuration.appsDirectory), and no command given")
            }
            let owner = manifest.account?.uid ?? geteuid()
            guard caller.uid == 0 || caller.uid == owner else {
                throw ProtocolError(.permissionDenied, "app \(name) runs as uid \(owner); uid \(caller.uid) may not launch it")
            }
            guard apps[AppID(name)].map({ !$0.lifecycle.phase.isAlive }) ?? true else {
                throw ProtocolError(.nameInUse, "app \(name) is already running (pid \(apps[AppID(name)]?.process?.pid ?? 0))")
            }
            isNew = apps[AppID(name)] == nil
            app = record(for: manifest)
        }
        do {
            try start(app, inBackground: request.background ?? false, reason: "launched by pid \(caller.pid)")
        } catch {
            // A command that could not even start leaves no app behind (a typo is not an app).
            if isNew && registry.count(of: app.id) == 0 { apps[app.id] = nil }
            throw error
        }
        // A program that does not speak the protocol will not connect: there is nothing to wait for.
        if request.waitForConnection ?? false, app.lifecycle.policy.speaksProtocol, app.client == nil, app.lifecycle.phase.isAlive {
            app.launchWaiters.append(PendingReply(client: client.id, request: request.id))
            finishLaunchWaiters(app)
        } else {
            reply(request.id, AppResult(app: status(of: app)), to: client)
        }
    }

    /// The record of an app launched with a command line: it runs as the caller (a root
    /// voipd starts it under the caller's account).
    private func adHocApp(_ request: LaunchRequest, arguments: [String], descriptors: DescriptorBag,
                          caller: PeerCredentials) throws -> (AppRecord, isNew: Bool) {
        let program = arguments[0]
        guard !program.isEmpty else { throw ProtocolError(.badRequest, "launch needs a command") }
        // Every status of the app carries its command line: it must fit in a frame.
        let size = (arguments + (request.environment ?? []) + [request.workingDirectory ?? ""]).reduce(0) { $0 + $1.utf8.count + 1 }
        guard size <= Self.largestCommandLine else {
            throw ProtocolError(.badRequest, "command line, environment and directory total \(size) bytes; at most \(Self.largestCommandLine)")
        }
        let name = request.name ?? String(program.split(separator: "/").last ?? Substring(program))
        try Self.validateName(name, what: "app")
        var account: ResolvedManifest.Account?
        // Root may launch on any voipd (the program runs as voipd does); others run as themselves.
        if caller.uid != geteuid() && caller.uid != 0 {
            guard geteuid() == 0, let found = ManifestCatalog.lookUpAccount(String(caller.uid)) else {
                throw ProtocolError(.permissionDenied, "voipd runs as uid \(geteuid()) and cannot start programs as uid \(caller.uid)")
            }
            account = found
        }
        if apps[AppID(name)] == nil { try checkAppQuota(caller.uid) }
        if let existing = apps[AppID(name)] {
            guard caller.uid == 0 || caller.uid == existing.uid else {
                throw ProtocolError(.permissionDenied, "app \(name) belongs to uid \(existing.uid)")
            }
            guard !existing.lifecycle.phase.isAlive else {
                throw ProtocolError(.nameInUse, "app \(name) is already running (pid \(existing.process?.pid ?? 0))")
            }
        }
        if apps.manifests[AppID(name)] != nil, caller.uid != 0 {
            throw ProtocolError(.permissionDenied, "\(name) is a manifest app; launch it by name, without a command")
        }
        for entry in request.environment ?? [] {
            guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex, !entry.contains("\0") else {
                throw ProtocolError(.badRequest, "environment entry \"\(entry)\" is not KEY=VALUE")
            }
        }
        // One descriptor serves for both output and error; two are output, then error.
        let output = descriptors.count > 0 ? descriptors.take(0) : nil
        let error: FileDescriptor?
        if descriptors.count > 1 {
            error = descriptors.take(1)
        } else {
            do {
                error = try output?.duplicate()
            } catch {
                throw ProtocolError(systemError: error, "cannot duplicate the output descriptor")
            }
        }
        let adoption = try Self.adoptionSettings(request)
        let command = LaunchCommand(arguments: arguments, environment: request.environment ?? [],
                                    workingDirectory: request.workingDirectory, account: account,
                                    adopt: adoption == nil ? nil : request.adopt)
        let specification = LaunchSpecification(command, standardOutput: output, standardError: error)
        let policy = AppPolicy(exitsOnSuspend: request.exitsOnSuspend ?? false, canLaunch: true,
                               relaunchOnData: request.relaunchOnData ?? true, runsInBackground: false,
                               speaksProtocol: request.speaksProtocol ?? (adoption == nil), suspendsWhenQuiet: adoption != nil)
        let isNew = apps[AppID(name)] == nil
        let app = apps[AppID(name)] ?? AppRecord(name: name, uid: caller.uid, lifecycle: newLifecycle(policy: policy),
                                          since: wallClockSeconds())
        apps[AppID(name)] = app
        setAdoption(adoption, of: app)
        if app.lifecycle.policy != policy { _ = feed(app, .policyChanged(policy)) }
        app.launch = specification
        return (app, isNew)
    }

    /// Starts an app's process from its launch specification and tells the lifecycle.
    /// Once SIGTERM (or SIGINT) is read, nothing is started, whatever asks: a client's launch
    /// read later in that turn, a relaunch for data or the shutdown's inputs. The process
    /// would be launched by a voipd about to exit, and left running unsupervised (its held
    /// sockets closed with voipd). The app is left as it was: this is not its launch failing.
    func start(_ app: AppRecord, inBackground: Bool, reason: String) throws {
        guard running else { throw Self.stopping(app.name) }
        guard let specification = app.launch else {
            throw ProtocolError(.launchFailed, "voipd does not know how to start \(app.name)")
        }
        let process: AppProcess
        var cgroup: AppCgroupBox?
        do {
            var request = try spawnRequest(for: app, specification)
            cgroup = try makeCgroup(for: app)
            request.cgroup = try cgroup?.cgroup.spawnTarget()
            process = AppProcess(pidfd: try spawn(request), isChild: true)
            process.cgroup = cgroup
            do {
                try watch(process, of: app)
            } catch {
                // Started, but voipd would never learn of its end: it is not left running unsupervised.
                end(process, of: app, startedBut: "not watched")
                throw error
            }
        } catch {
            if let cgroup {
                // The failed child was reaped: the cgroup is empty.
                do { try cgroup.cgroup.remove() } catch { log.warning("\(app.name): cannot remove its cgroup: \(error)") }
            }
            feed(app, .launchFailed("\(error)"))
            let refusal = ProtocolError(systemError: error, "cannot start \(specification.arguments[0])")
            throw refusal.code == .outOfResources ? refusal : ProtocolError(.launchFailed, "cannot start \(specification.arguments[0]): \(error)")
        }
        app.process = process
        storeRecord(of: app)
        storeProcess(of: app)
        log.info("\(app.name): started pid \(process.pid): \(specification.arguments.joined(separator: " "))")
        feed(app, .launched(inBackground: inBackground, reason: reason))
    }

    /// Ends a process voipd has just started and will not supervise (with its group or
    /// cgroup) and reaps it: killed before it could do anything long, it is gone at once.
    private func end(_ process: AppProcess, of app: AppRecord, startedBut why: String) {
        do {
            try process.send(SIGKILL)
            _ = try process.pidfd.waitForExit()
        } catch {
            log.error("\(app.name): cannot end pid \(process.pid), started but \(why): \(error)")
        }
    }

    /// The lifecycle asked for a relaunch (data arrived for a dead app, or foreground).
    func relaunch(_ app: AppRecord, inBackground: Bool, reason: String) {
        // Started once the current actions are done, so the lifecycle is not re-entered.
        apps.deferredStarts.append((app.id, inBackground, reason))
    }

    func performDeferredStart() {
        let (name, inBackground, reason) = apps.deferredStarts.removeFirst()
        guard let app = apps[name], !app.lifecycle.phase.isAlive else { return }
        // Checked before the survivor below, which is kept as it is too (start refuses the
        // rest): data read later in SIGTERM's turn, or a shutdown's inputs, ask for these.
        guard running else { return log.info("\(name): not started (\(reason)): voipd is stopping") }
        if let survivor = app.process {
            // A process taken back stopped or frozen at start, not yet decided about (held
            // sockets come back after processes: data waiting on one asks for a launch). It is
            // the app: started again, a second copy would run beside it (or, in its cgroup, it
            // would be killed to make room). The events queued have it resumed for them
            // instead (keepOrResumeStoppedSurvivors).
            return log.info("\(name): not started again: pid \(survivor.pid) is the app's process still")
        }
        metrics.relaunches += 1
        do {
            try start(app, inBackground: inBackground, reason: reason)
        } catch {
            log.warning("\(name): relaunch failed: \(error)")
        }
    }

    /// Puts a process's pidfd in the epoll set: it becomes readable when the process ends.
    func watch(_ process: AppProcess, of app: AppRecord) throws {
        process.token = try loop.register(process.pidfd.descriptor, .readable, .process(app.id))
    }

    /// The pidfd is readable: the process ended. Reap it (if it is voipd's child) and tell
    /// the lifecycle.
    func processEvent(_ app: AppRecord) {
        guard let process = app.process else { return }
        let end: ProcessEnd
        if process.isChild {
            let status: ProcessStatus?
            do {
                status = try process.pidfd.reapIfExited()
            } catch {
                // ECHILD: reaped already (it cannot be another's child).
                log.warning("\(app.name): cannot reap pid \(process.pid): \(error)")
                status = nil
            }
            switch status {
            case .exited(let code)?: end = .exited(code: code)
            case .killed(let signal, _)?: end = .signaled(signal: signal, name: signalName(signal))
            case nil, .stopped?, .continued?:
                // Readable only on exit; a spurious wake-up is ignored.
                guard ProcFS.state(of: process.pid) == nil || ProcFS.state(of: process.pid) == "Z" else { return }
                end = .unknown
            }
        } else {
            end = .unknown
        }
        loop.deregister(process.pidfd.descriptor, token: process.token)
        app.process = nil
        releaseCgroup(of: process, of: app)
        notifier.removeFromStore(app: app.name, name: StoredApp.processName)
        log.info("\(app.name): pid \(process.pid) ended: \(end)")
        // Data it was told of but did not read is still for it: a relaunch will bring it
        // (a crash while handling a wake must not lose the call). Crash loops are throttled.
        for held in registry.sockets(of: app.id) { held.arrivedSinceReport = true }
        releaseAdoptedSockets(of: app)
        feed(app, .processExited(end))
        if let id = app.client, let client = clients[id] {
            // The connection belonged to the dead process.
            closeClient(client)
        }
    }

    /// SIGCHLD: one of voipd's children stopped, continued or ended. Only the stops voipd
    /// waits for matter (ends come through the pidfds); signals coalesce, so every awaited
    /// stop the kernel reports is checked, by its pidfd, instead of sweeping all the
    /// children (O(apps)). Freezes and other stops are looked at on their own schedule.
    func childStateChanged() {
        for name in apps.reportedStopsAwaited {
            if let app = apps[name] { checkStop(app) }
        }
    }

    /// Replies to `launch --wait` requests once the app has connected or ended.
    func finishLaunchWaiters(_ app: AppRecord) {
        let connectionExpected = app.lifecycle.connection == .awaiting
        guard !app.launchWaiters.isEmpty, app.client != nil || !app.lifecycle.phase.isAlive || !connectionExpected else { return }
        let waiters = app.launchWaiters
        app.launchWaiters.removeAll()
        for waiter in waiters {
            guard let client = clients[waiter.client] else { continue }
            if app.lifecycle.phase.isAlive && app.client != nil {
                reply(waiter.request, AppResult(app: status(of: app)), to: client)
            } else if app.lifecycle.phase.isAlive {
                sendError(ProtocolError(.launchFailed, "\(app.name) started (pid \(app.process?.pid ?? 0)) but did not connect within \(configuration.timings.connectTimeout.seconds) s"),
                          request: waiter.request, to: client)
            } else {
                sendError(ProtocolError(.launchFailed, "\(app.name) ended before connecting: \(app.lifecycle.terminationReason?.description ?? "unknown")"),
                          request: waiter.request, to: client)
            }
        }
    }
}

extension Daemon {
    /// The most bytes of command line, environment and directory a launch may carry.
    static let largestCommandLine = 16 * 1024

    /// The refusal of a start asked for once voipd has read SIGTERM or SIGINT.
    static func stopping(_ name: String) -> ProtocolError {
        ProtocolError(.launchFailed, "voipd is stopping: \(name) not started")
    }
}

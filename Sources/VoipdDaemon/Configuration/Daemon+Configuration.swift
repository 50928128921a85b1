import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Manifests and configuration reloads.
extension Daemon {
    /// Reads the apps directory; a manifest in error is reported and left out.
    func loadManifests() {
        let (loaded, errors) = ManifestCatalog.load(configuration.appsDirectory, socketQuota: configuration.socketQuota,
                                              timings: configuration.timings, timeScale: configuration.timeScale)
        for error in errors { log.error("invalid manifest: \(error)") }
        apps.manifests = Dictionary(uniqueKeysWithValues: loaded.map { (AppID($0.key), $0.value) })
        apps.invalidManifests = Dictionary(errors.compactMap { error in error.file.map { (AppID(Self.manifestName(file: $0)), error) } }) { first, _ in first }
        // Apps already known take their manifest's policy for what comes next.
        for (name, manifest) in loaded {
            if let app = apps[AppID(name)], app.lifecycle.policy != manifest.policy { changePolicy(of: app, to: manifest.policy) }
        }
        if !loaded.isEmpty { log.info("\(loaded.count) app manifests in \(configuration.appsDirectory): \(loaded.keys.sorted().joined(separator: ", "))") }
    }

    /// Gives a known app its policy anew (a manifest read again). A keep-alive below the
    /// minimum it now has is raised to it by its lifecycle, and the log says so. The service
    /// manager's store and the state file record a running app anew: a voipd started after this
    /// one dies goes on with the policy and the keep-alive this one gives (an app kept suspended
    /// across that restart cannot ask for its keep-alive again).
    private func changePolicy(of app: AppRecord, to policy: AppPolicy) {
        let previousInterval = app.lifecycle.keepAliveInterval
        let previousWarning = keepAliveWarning(of: app)
        _ = feed(app, .policyChanged(policy))
        if let previousInterval, let interval = app.lifecycle.keepAliveInterval, interval != previousInterval {
            let scale = configuration.timeScale
            log.notice("""
                \(app.name): keep-alive raised from \(KeepAliveCoverage.seconds(previousInterval.seconds / scale)) \
                to \(KeepAliveCoverage.seconds(interval.seconds / scale)), its keep-alive minimum now
                """)
            if let warning = keepAliveWarning(of: app), warning != previousWarning { log.warning("\(app.name): \(warning)") }
        }
        // Only a running app's record is in the store (its launch put it there).
        if app.process != nil { storeRecord(of: app) }
        noteStateChange()
    }

    /// iOS launched VoIP apps in the background at boot; manifests ask for the same.
    func launchAtStart() {
        for manifest in apps.manifests.values.sorted(by: { $0.name < $1.name }) where manifest.launchAtStart {
            guard apps[AppID(manifest.name)].map({ !$0.lifecycle.phase.isAlive }) ?? true else { continue }
            do {
                try start(record(for: manifest), inBackground: true, reason: "launched at start (manifest)")
            } catch {
                log.error("\(manifest.name): cannot launch at start: \(error)")
            }
        }
    }

    /// The app record of a manifest's app, made if there is none yet, with the manifest's
    /// policy and way to start it.
    func record(for manifest: ResolvedManifest) -> AppRecord {
        let owner = manifest.account?.uid ?? geteuid()
        let app = apps[AppID(manifest.name)] ?? AppRecord(name: manifest.name, uid: owner,
                                                   lifecycle: newLifecycle(policy: manifest.policy),
                                                   since: wallClockSeconds())
        apps[AppID(manifest.name)] = app
        setAdoption(manifest.adoption, of: app)
        if app.lifecycle.policy != manifest.policy { _ = feed(app, .policyChanged(manifest.policy)) }
        app.launch = LaunchSpecification(LaunchCommand(arguments: manifest.arguments, environment: manifest.environment,
                                                       workingDirectory: manifest.workingDirectory, account: manifest.account))
        return app
    }

    /// The VoIP sockets an app may have held.
    func socketQuota(of app: AppID) -> Int { socketQuota(manifestAt: apps.manifests.index(forKey: app)) }

    /// The same, for the app whose manifest is at `index` (nil: it has none), read in place.
    func socketQuota(manifestAt index: Dictionary<AppID, ResolvedManifest>.Index?) -> Int {
        index.flatMap { apps.manifests.values[$0].socketQuota } ?? configuration.socketQuota
    }

    /// The name a manifest file gives its app when it names none.
    static func manifestName(file: String) -> String {
        String(file.split(separator: "/").last ?? "").replacing(".json", with: "")
    }

    /// SIGHUP: the configuration file and manifests again. An invalid configuration is
    /// reported and the running one kept.
    func reloadConfiguration() {
        // `systemctl reload` waits for READY=1 after RELOADING=1 (Type=notify-reload, systemd 253).
        notifier.notify(["RELOADING=1", "MONOTONIC_USEC=\(MonotonicInstant.now.nanoseconds / 1000)"])
        defer { notifier.notify(["READY=1", "STATUS=\(statusLine)"]) }
        let updated: DaemonConfiguration
        do {
            updated = try configuration.source.load(environment: configuration.environment)
        } catch {
            log.error("configuration not reloaded, keeping the running one: \(error)")
            loadManifests()
            return
        }
        if updated.socketPath != configuration.socketPath || updated.socketMode != configuration.socketMode {
            log.warning("the control socket's path and mode change only when voipd restarts")
        }
        if updated.stateDirectory != configuration.stateDirectory {
            log.warning("the state file's directory changes only when voipd restarts")
        }
        if updated.suspension != configuration.suspension || updated.cgroupDirectory != configuration.cgroupDirectory {
            log.warning("the suspension backend changes only when voipd restarts")
        }
        if updated.transfers != configuration.transfers {
            log.warning("the transfer settings change only when voipd restarts")
        }
        let triggerChanged = updated.memoryPressureTrigger != configuration.memoryPressureTrigger
        var kept = updated
        // The transfer service runs with the settings voipd started with, whether it came up
        // at start or comes up at a later request (setUpTransfersIfRecorded()).
        kept.transfers = configuration.transfers
        kept.socketPath = configuration.socketPath
        kept.socketMode = configuration.socketMode
        kept.stateDirectory = configuration.stateDirectory
        kept.suspension = configuration.suspension
        kept.cgroupDirectory = configuration.cgroupDirectory
        configuration = kept
        log.level = kept.logLevel
        for app in apps.values {
            app.lifecycle.timings = kept.timings
            // A higher default minimum: a keep-alive below it is raised, as a manifest's would raise it.
            if let interval = app.lifecycle.keepAliveInterval, interval < app.lifecycle.keepAliveMinimum {
                changePolicy(of: app, to: app.lifecycle.policy)
            }
        }
        events.resize(to: kept.eventHistory)
        if triggerChanged {
            if let old = memoryPressure {
                loop.deregister(old.file.descriptor, token: old.token)
                memoryPressure = nil
            }
            setUpMemoryPressureTrigger()
        }
        loadManifests()
        log.notice("configuration reloaded from \(kept.source.file ?? "the command line")")
    }
}

extension Daemon {
    /// Holds again the VoIP sockets a service manager gave back at start (its fd store),
    /// under their apps; an app not known by a manifest is recorded as not running, to be
    /// claimed by the first process that says hello under its name. Anything else passed is
    /// closed.
    func takeBack(_ activated: ActivatedDescriptors) {
        for (index, entry) in activated.entries.enumerated() {
            switch entry {
            case .unknown(let name):
                log.warning("closing a descriptor \"\(name)\" passed by the service manager: not a name voipd gave")
                _ = activated.take(index)
                // Out of the store too, or it comes back at every start and counts toward its maximum.
                notifier.notify(["FDSTOREREMOVE=1", "FDNAME=\(name)"])
            case .heldSocket(let appName, let socketName):
                guard let descriptor = activated.take(index) else { continue }
                takeBack(descriptor, app: appName, name: socketName)
            case .controlSocket, .record, .process:
                continue
            }
        }
    }

    private func takeBack(_ descriptor: consuming FileDescriptor, app appName: String, name socketName: String) {
        let kind: SocketKind
        do {
            try Daemon.validateName(appName, what: "app")
            try Daemon.validateName(socketName, what: "socket")
            guard let found = try Socket.kind(of: descriptor) else { throw Errno(ENOTSOCK, call: "fstat") }
            kind = found
        } catch {
            log.warning("closing \"\(appName)/\(socketName)\" from the service manager: not a held socket (\(error))")
            return notifier.removeFromStore(app: appName, name: socketName)
        }
        let app: AppRecord
        if let existing = apps[AppID(appName)] {
            app = existing
        } else if let manifest = apps.manifests[AppID(appName)] {
            app = record(for: manifest)
        } else {
            app = AppRecord(name: appName, uid: geteuid(), lifecycle: newLifecycle(), since: wallClockSeconds())
            app.unclaimed = true
            apps[AppID(appName)] = app
        }
        guard registry.socket(app: AppID(appName), name: socketName) == nil else { return }
        do {
            try hold(descriptor, app: app, name: socketName, kind: kind.name, socketKind: kind, origin: .inherited)
            log.info("\(appName): holding VoIP socket \(socketName) (\(kind.name)) again, from the service manager's store")
        } catch {
            log.warning("\(appName): cannot hold \(socketName) again: \(error)")
            persistence.socketsNotTakenBack[app.id, default: []].append(socketName)
        }
    }
}

extension Daemon {
    /// Stores (or replaces) an app's record in the service manager's store.
    func storeRecord(of app: AppRecord) {
        guard notifier.isEnabled else { return }
        do {
            let record = try storedRecord(of: app).memoryFile()
            notifier.replaceInStore(app: app.name, name: StoredApp.recordName, descriptor: record)
        } catch {
            log.warning("\(app.name): cannot store its record with the service manager: \(error)")
        }
    }

    /// What the store and the state file keep of `app`, its keep-alive's next instant included.
    func storedRecord(of app: AppRecord) -> StoredApp {
        StoredApp(of: app, keepAliveDue: timers.deadline(of: .app(app.id, .keepAlive)))
    }

    /// Stores an app's running process (its pidfd), so a voipd started after a crash can
    /// resume it if it was left stopped.
    func storeProcess(of app: AppRecord) {
        guard let process = app.process else { return }
        notifier.replaceInStore(app: app.name, name: StoredApp.processName, descriptor: process.pidfd.descriptor)
    }

    /// Takes back the records and processes of apps from the store (the sockets follow).
    func takeBackApps(_ activated: ActivatedDescriptors) {
        for (index, entry) in activated.entries.enumerated() {
            guard case .record(let name) = entry, let descriptor = activated.take(index) else { continue }
            let stored: StoredApp
            do {
                try Daemon.validateName(name, what: "app")
                stored = try StoredApp.read(descriptor)
            } catch {
                log.warning("dropping an unreadable stored record for \(name): \(error)")
                notifier.removeFromStore(app: name, name: StoredApp.recordName)
                continue
            }
            guard let app = apps[AppID(name)] else {
                apps[AppID(name)] = stored.appRecord(named: name, lifecycle: newLifecycle(policy: stored.policy))
                continue
            }
            app.recordedKeepAlive = stored.keepAlive
        }
    }

    /// Adopts the processes the store kept for apps: a crash of the previous voipd may have
    /// left them stopped; they are resumed, in the background, and supervised again, with
    /// their process group when they still lead it (voipd launched each as the leader of one,
    /// and stopped its other members with it). The state file, when there is one, says
    /// which of them voipd froze in a cgroup.
    func takeBackProcesses(_ activated: ActivatedDescriptors, recorded: RecoveryState?) {
        for (index, entry) in activated.entries.enumerated() {
            guard case .process(let name) = entry, let descriptor = activated.take(index) else { continue }
            guard let app = apps[AppID(name)], app.process == nil, let pidfd = PidFd(adoptingUnknown: descriptor) else {
                notifier.removeFromStore(app: name, name: StoredApp.processName)
                continue
            }
            // Only voipd's launches are in the store, each the leader of a session and process
            // group of its own whose members voipd stopped with it. The kernel says whether it
            // still leads it (a session leader cannot leave it), state file or not: signalled
            // alone, its helpers would stay stopped.
            let leadsGroup = ProcFS.processGroup(of: pidfd.pid) == pidfd.pid
            let frozenIn = recorded?.cgroup(app: name, pidfd)
            let process = AppProcess(pidfd: pidfd, isChild: false, signalsGroup: leadsGroup)
            // Frozen by the freezer, maybe: kept frozen, or thawed, in its cgroup whatever this
            // voipd's configuration (adoptSurvivor).
            if let frozenIn { process.cgroup = openCgroup(frozenIn.path, version: frozenIn.version, holding: process.pid, of: name) }
            adoptSurvivor(process, of: app, inBackground: true)
        }
    }
}

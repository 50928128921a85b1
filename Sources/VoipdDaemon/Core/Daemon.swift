import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Keys of the daemon's timers, all served by one timerfd.
enum DaemonTimer: Hashable, Sendable, Codable {
    /// A lifecycle timer of one app.
    case app(AppID, LifecycleTimer)
    /// Look at /proc for a stop no SIGCHLD will confirm (the app is not voipd's child).
    case stopCheck(AppID)
    /// The app's stop or freeze is not done within ``Daemon/stopDeadline``: it is ended instead.
    case stopDeadline(AppID)
    /// Tell the service manager voipd is alive (WATCHDOG=1).
    case serviceWatchdog
    /// Tell the service manager how things are (STATUS=), at most once a second.
    case serviceStatus
    /// Write the state file, at most once a second (before a stop, at once if need be).
    case saveState
    /// Accept connections again after running out of descriptors.
    case resumeAccepting
    /// Close a connection that has made no request (and is no app or follower) for too long.
    case helloTimeout(UInt64)
    /// Sample an adopted program's activity (and look at its sockets) while it runs in the background.
    case adoption(AppID)
    /// Page out the next slice of the hibernations under way (at the next turn of the loop).
    case hibernationSlice
    /// The background-transfer service's next deadline.
    case transfers
}

/// The daemon: one thread, one epoll loop. It owns every descriptor and performs what the
/// apps' lifecycle state machines decide; it decides nothing about lifecycles itself.
public final class Daemon {
    var configuration: DaemonConfiguration
    var log: Logger
    let loop: EventLoop
    let codec = WireCodec()
    let signals: SignalFd
    let timers: DaemonTimers
    let suspender: AppSuspender
    let apps = AppTable()
    let clients: ClientTable
    let registry = HeldSocketRegistry()
    /// Ordinary sockets of suspended apps whose receive queues are watched.
    let queueWatches = QueueWatches()
    /// Suspended apps hibernated, being paged out, or too large for it.
    let hibernations = Hibernations()
    let persistence: Persistence
    var events: EventLog
    var metrics = Metrics()
    var locked = false
    var memoryPressure: MemoryPressureTrigger?
    /// The background-transfer service (nil: off, or not brought up yet: ``setUpTransfers()``).
    var transfers: TransferHost?
    /// Whether bringing up the transfer service was tried: at start when its store holds
    /// tasks, else at the first request that needs it (``setUpTransfersIfRecorded()``).
    var transfersTried = false
    /// Transfer agents killed for an upgrade and not yet ended, reaped when they end.
    let endingAgents = EndingAgents()
    /// Read before every turn of the loop, only ever read or assigned: not checked for
    /// exclusive access at run time (`@exclusivity(unchecked)`).
    @exclusivity(unchecked) var running = true
    let notifier: ServiceNotifier
    /// Whether the kernel reports children's stops and continues with SIGCHLD. On only while
    /// the stop of a child voipd stopped with SIGSTOP is awaited (``AppTable/reportedStopsAwaited``),
    /// the one stop a report confirms: a woken child would otherwise signal voipd as it first
    /// runs, and voipd, woken, could take the CPU from it before it reads its socket. A
    /// freeze is confirmed by the cgroup's state and a stop of another process by /proc,
    /// so neither turns reports on.
    private(set) var reportingStops = false {
        didSet {
            guard reportingStops != oldValue else { return }
            do {
                try SignalDisposition.reportChildStops(reportingStops)
            } catch {
                log.error("cannot switch stop reports \(reportingStops ? "on" : "off"): \(error)")
            }
        }
    }

    /// Every manifest error of a configuration (for `--check-config`).
    public static func checkManifests(_ configuration: DaemonConfiguration) -> [ConfigurationError] {
        ManifestCatalog.load(configuration.appsDirectory, socketQuota: configuration.socketQuota,
                             timings: configuration.timings, timeScale: configuration.timeScale).errors
    }

    /// Binds the control socket and sets up the loop. Nothing runs until ``run()``.
    public init(configuration: DaemonConfiguration, arguments: [String] = [], upgradeState: CInt? = nil) throws {
        self.configuration = configuration
        // Descriptors are what every client costs: voipd takes all the kernel allows it.
        let descriptorLimitAtStart = try Self.raiseDescriptorLimit()
        log = Logger(level: configuration.logLevel)
        notifier = ServiceNotifier(environment: configuration.environment, log: log)
        events = EventLog(capacity: configuration.eventHistory)
        // A vanished peer must be an EPIPE, never a fatal SIGPIPE.
        try SignalDisposition.ignore(SIGPIPE)
        signals = try SignalFd(signals: [SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR2])
        try SignalDisposition.reportChildStops(false)
        let snapshot = try upgradeState.map { try DaemonSnapshot.read(from: FileDescriptor(adopting: $0)) }
        loop = try EventLoop(carrying: snapshot?.eventLoop)
        timers = try DaemonTimers()
        let directory = parentDirectory(of: configuration.socketPath)
        if !directory.isEmpty {
            do {
                try makeDirectory(directory, mode: 0o755)
            } catch {
                // Binding the socket there says what is wrong, unless a service manager passed it.
                log.info("cannot make the control socket's directory: \(error)")
            }
        }
        // After an upgrade the limit voipd has is the one it raised: the first start's is in the snapshot.
        persistence = Persistence(arguments: arguments, state: snapshot?.persistence ?? Persistence.State(appResourceLimits: [descriptorLimitAtStart]))
        let activated = snapshot == nil ? ActivatedDescriptors(environment: configuration.environment) : ActivatedDescriptors()
        var socketActivated = false
        var boundControlSocket = false
        let listener: FileDescriptor
        let stateFile: StateFile?
        if let snapshot {
            // An in-place upgrade: the old program's listening socket, still open, with the path
            // it had (a service manager's, when it passed the socket to the old program).
            listener = FileDescriptor(adopting: snapshot.listener)
            try listener.setCloseOnExec()
            if let path = try Socket.unixPath(of: listener), path != self.configuration.socketPath {
                self.configuration.socketPath = path
            }
            // And its lock, unless it had none (an older program): taken now.
            do {
                stateFile = try Self.openStateFile(self.configuration, log: log, carriedLock: snapshot.stateLock)
            } catch {
                // Not a reason to fail the upgrade: that would leave its apps stopped.
                log.error("no state file: \(error)")
                stateFile = nil
            }
        } else if let control = activated.takeControlSocket() {
            // Socket activation: the service manager bound it, and keeps it across restarts.
            listener = control
            socketActivated = true
            try Self.checkActivatedControlSocket(listener)
            try listener.setNonBlocking()
            // The socket's real path is what apps must be told, whatever the configuration says.
            if let path = try Socket.unixPath(of: listener), path != self.configuration.socketPath {
                self.configuration.socketPath = path
            }
            stateFile = try Self.openStateFile(self.configuration, log: log)
        } else {
            // Locked first: a voipd that must not start leaves the running one's socket alone.
            stateFile = try Self.openStateFile(configuration, log: log)
            listener = try Socket.listenUnix(path: configuration.socketPath, mode: mode_t(configuration.socketMode))
            boundControlSocket = true
        }
        // The instance's name comes from the socket apps connect to, known only now: a voipd
        // a service manager passed another socket than its configuration names must not take
        // the cgroups of the instance of that configured path (its apps thawed and removed as
        // unclaimed), nor lose its own frozen apps when it next starts configured otherwise.
        suspender = try AppSuspender(self.configuration)
        clients = ClientTable(listener: listener, boundControlSocket: boundControlSocket)
        clients.admission.listenerToken = try loop.register(clients.listener, .readable, .listener)
        _ = try loop.register(signals.descriptor, .readable, .signals)
        _ = try loop.register(timers.timerfd.descriptor, .readable, .timer)
        setUpMemoryPressureTrigger()
        if socketActivated { log.notice("control socket passed by the service manager (socket activation)") }
        loadManifests()
        persistence.stateFile = stateFile
        if let snapshot { try restore(snapshot) }
        // Records, then the processes still running (so their data does not start a second
        // copy beside them), then the sockets. The service manager's store first, then the
        // state file for what the store did not have; an upgrade's snapshot has it all.
        let recorded = snapshot == nil ? loadStateFile() : nil
        takeBackApps(activated)
        takeBackProcesses(activated, recorded: recorded)
        if let recorded { takeBackRecordedApps(recorded) }
        takeBack(activated)
        keepOrResumeStoppedSurvivors(recorded: recorded)
        releaseUnclaimedCgroups()
        if let interval = notifier.watchdogInterval { timers.set(.serviceWatchdog, deadline: now + interval) }
    }

    /// Serves until SIGTERM or SIGINT, then leaves no app stopped.
    public func run() throws {
        log.notice("voipd listening on \(configuration.socketPath) (pid \(getpid()), suspension by \(suspender.name))")
        launchAtStart()
        saveStateIfChanged()
        notifier.notify(["READY=1", "MAINPID=\(getpid())", "STATUS=\(statusLine)"])
        // The control socket listens and the apps are back: READY=1 says so at once. The
        // transfer service (its records decoded, a third of the start's work) comes up
        // after it, before the loop reads the first request, if its store holds tasks;
        // otherwise at the first request that needs it.
        setUpTransfersIfRecorded()
        // What the start raised (an upgrade's restore tells a suspended app of data that came
        // during the exec, and checks a stop the old program had not confirmed) is done now,
        // not when some later event happens to wake the loop.
        drainDeferredInputs()
        while running { turn() }
        shutDown()
    }

    /// One turn of the loop: wait (at most ``loopWait``), serve what is ready, then what
    /// every turn ends with.
    func turn() {
        watchNotifierBacklog()
        rearmTimer()
        let woken = loop.wait(timeoutMilliseconds: loopWait) { source, events in
            // A wake's bookkeeping first: what the app needed was done before blocking.
            settleWakeBookkeeping()
            dispatch(source, events)
            drainDeferredInputs()
        }
        if !woken {
            // The bounded wait ran out (the woken app said nothing): the wake's bookkeeping
            // now, and what it raised (an adopted program's keep-alive, a transfer's delivery
            // once the app is back) before blocking again, not whenever some event comes.
            settleWakeBookkeeping()
            drainDeferredInputs()
        }
        fireTimersTheTimerfdMissed()
        // The timerfd follows what the turn changed before the turn's records go out, not at
        // the next turn: a follower woken by its record (the wake bench, waiting for an app's
        // suspension to send it the next datagram) may take this CPU there, and whatever voipd
        // still has to do then waits in front of the next wake. (A freeze confirmed by its
        // timed re-read leaves the timerfd to re-arm for the next deadline at every suspension.)
        rearmTimer()
        flushBroadcasts()
        saveStateIfDue()
        upgradeIfAsked()
    }

    private func dispatch(_ source: EventSource, _ events: EpollEvents) {
        switch source {
        case .listener: acceptClients()
        case .signals: handleSignals()
        case .timer: handleTimers()
        case .memoryPressure: handleMemoryPressureEvent()
        case .client(let id): if let client = clients[id] { serviceClient(client, events) }
        case .heldSocket(let id): if let socket = registry.socket(id: id) { heldSocketEvent(socket, events) }
        case .process(let name): if let app = apps[name] { processEvent(app) }
        case .cgroupEvents(let name): if let app = apps[name] { cgroupEvent(app) }
        case .watchedQueue(let id): watchedQueueEvent(id, events)
        case .serviceNotifier: notifier.flush()
        case .transfer(let token): transferDescriptorReady(token, events)
        case .transferConditions: transferConditionsEvent()
        case .endingAgent(let pid): endingAgents.ready(pid, loop: loop, log: log)
        }
    }

    /// Serves held sockets that are ready now, before anything else: called before each
    /// control request the loop's wait did not just look past (a wake must not wait for them).
    func serveHeldSockets() {
        loop.takeUrgent { source, events in
            guard case .heldSocket(let id) = source, let socket = registry.socket(id: id) else { return }
            heldSocketEvent(socket, events)
            drainDeferredInputs()
        }
    }

    // MARK: - Time

    var now: MonotonicInstant { .now }

    func rearmTimer() {
        let wasFailing = timers.failing
        do {
            try timers.rearm()
            if wasFailing { log.notice("the timer is armed again") }
        } catch {
            if !wasFailing { log.error("cannot arm the timer: \(error); the loop's wait keeps the deadlines until it can (further failures not logged)") }
        }
    }

    /// How long the loop may block: ``wakeBookkeepingWait``, and never past a deadline the
    /// timerfd could not be armed for.
    var loopWait: CInt {
        let bookkeeping = wakeBookkeepingWait
        guard let unarmed = timers.unarmedDeadline else { return bookkeeping }
        let timer = pollTimeout(until: unarmed)
        return bookkeeping < 0 ? timer : min(bookkeeping, timer)
    }

    /// Fires the timers due by a deadline the timerfd could not be armed for: the loop's wait
    /// ended by it (``loopWait``), and nothing else will.
    func fireTimersTheTimerfdMissed() {
        guard let unarmed = timers.unarmedDeadline, now >= unarmed else { return }
        handleTimers()
        // What the timers raised (a stop a look at /proc confirmed), at once, not after the next wait.
        drainDeferredInputs()
    }

    private func handleTimers() {
        do {
            try timers.acknowledge()
        } catch {
            log.error("cannot read the timer: \(error)")
        }
        for key in timers.takeDue(at: now) {
            switch key {
            case .app(let name, let kind):
                guard let app = apps[name] else { continue }
                feed(app, .timerFired(kind))
                // A launch waiting for a connection that will not come is answered now.
                if kind == .connect { finishLaunchWaiters(app) }
            case .stopCheck(let name):
                if let app = apps[name] { checkStop(app) }
            case .stopDeadline(let name):
                if let app = apps[name] { stopDeadlinePassed(app) }
            case .serviceWatchdog:
                notifier.notify(["WATCHDOG=1"])
                if let interval = notifier.watchdogInterval { timers.set(.serviceWatchdog, deadline: now + interval) }
            case .serviceStatus:
                notifier.notify(["STATUS=\(statusLine)"])
            case .saveState:
                saveStateIfChanged()
            case .resumeAccepting:
                resumeAccepting()
            case .helloTimeout(let id):
                helloTimeoutFired(id)
            case .adoption(let name):
                if let app = apps[name] { adoptionTimerFired(app) }
            case .hibernationSlice:
                pageOutSlice()
            case .transfers:
                transferTimerFired()
            }
        }
    }

    // MARK: - Signals

    private func handleSignals() {
        while true {
            let signal: CInt
            do {
                guard case .processed(let next) = try signals.next() else { return }
                signal = next
            } catch {
                return log.error("cannot read the signals: \(error)")
            }
            switch signal {
            case SIGTERM, SIGINT:
                log.notice("received \(signalName(signal)): shutting down")
                running = false
            case SIGCHLD:
                childStateChanged()
            case SIGUSR2:
                log.notice("received SIGUSR2: upgrading in place")
                persistence.upgradeBySignal = true
            case SIGHUP:
                log.notice("received SIGHUP: reloading the configuration and manifests")
                reloadConfiguration()
            default:
                break
            }
        }
    }

    // MARK: - Feeding the lifecycle

    /// Feeds an input to an app's state machine and performs the actions it returns, then
    /// whatever those actions raised. Returns the input's own outcome (for replies).
    /// Never called while actions are being performed: those raise inputs with ``feedLater(_:_:)``.
    /// `resumedAt`: the wall-clock time the process was continued at already, on the wake
    /// path, so the answer's `.resume` has been done (and its transition is stamped then).
    /// On the wake path, the answer's bookkeeping waits until voipd has blocked once (``WakeBookkeeping``).
    @discardableResult
    func feed(_ app: AppRecord, _ input: LifecycleInput, resumedAt: Double? = nil) -> LifecycleOutcome {
        let outcome = handle(input, for: app, resumedAt: resumedAt)
        drainDeferredInputs()
        return outcome
    }

    /// One input through the lifecycle, and its actions performed.
    private func handle(_ input: LifecycleInput, for app: AppRecord, resumedAt: Double? = nil) -> LifecycleOutcome {
        // Earlier answers' actions before this one's, whichever app they were for.
        settleWakeBookkeeping()
        // Read in place (`inspect`): the wake path's records are cold in cache.
        let callStarted = app.lifecycle.inspect { $0.callStartedAt }
        let decidedAt = now
        let outcome = app.lifecycle.handle(input, now: decidedAt)
        log.debug("\(app.name): \(input) → \(outcome.reply), \(outcome.actions)")
        if app.lifecycle.inspect({ $0.callStartedAt }) != callStarted { noteCall(of: app, startedAt: callStarted, after: input) }
        if let resumedAt, WakeBookkeeping.canDefer(outcome.actions) {
            perform(outcome.actions, for: app, resumedAt: resumedAt, decidedAt: decidedAt, only: .neededByTheApp)
            // Stop reports off now if no stop is awaited any more: on, they would have the
            // woken child signal voipd as it first runs.
            noteStopAwaited(app)
            apps.wakeBookkeeping.append(WakeBookkeeping(app: app.id, actions: outcome.actions, continuedAt: resumedAt, decidedAt: decidedAt))
            return outcome
        }
        perform(outcome.actions, for: app, resumedAt: resumedAt, decidedAt: decidedAt)
        noteActionsPerformed(app)
        return outcome
    }

    /// What follows every batch of an app's actions, once its state is what they made it.
    private func noteActionsPerformed(_ app: AppRecord) {
        noteStopAwaited(app)
        noteAdoption(app)
        noteTransferPresence(app)
    }

    /// Performs what wakes left for after voipd blocked (``WakeBookkeeping``): at the next
    /// turn of the loop, and before any input is fed or request handled before that.
    func settleWakeBookkeeping() {
        guard !apps.wakeBookkeeping.isEmpty else { return }
        let owed = apps.wakeBookkeeping
        apps.wakeBookkeeping.removeAll(keepingCapacity: true)
        for bookkeeping in owed {
            guard let app = apps[bookkeeping.app] else { continue }
            perform(bookkeeping.actions, for: app, resumedAt: bookkeeping.continuedAt, decidedAt: bookkeeping.decidedAt,
                    only: .bookkeeping)
            noteActionsPerformed(app)
        }
    }

    /// How long the loop may block: for ever, unless a wake's bookkeeping waits
    /// (``WakeBookkeeping/longestWait``, and never past its earliest timer).
    var wakeBookkeepingWait: CInt {
        guard !apps.wakeBookkeeping.isEmpty else { return -1 }
        var until = apps.wakeBookkeeping[0].decidedAt + WakeBookkeeping.longestWait
        for bookkeeping in apps.wakeBookkeeping {
            // In place: this is looked at just before the wake's turn blocks.
            bookkeeping.actions.withUnsafeBufferPointer { actions in
                for index in actions.indices {
                    if case .startTimer(_, let after) = actions[index] { until = min(until, bookkeeping.decidedAt + after) }
                }
            }
        }
        return pollTimeout(until: until)
    }

    /// Brings ``AppTable/stopsAwaited`` in line with the app's phase, once its actions are done.
    func noteStopAwaited(_ app: AppRecord) {
        // Every wake's batch ends here: with no stop awaited and reports off there is nothing
        // to bring in line, and no set to hash the app's name into.
        let suspending = app.lifecycle.inspect { $0.phase } == .suspending
        if !suspending && apps.stopsAwaited.isEmpty && !reportingStops { return }
        if suspending {
            if apps.stopsAwaited.insert(app.id).inserted { timers.set(.stopDeadline(app.id), deadline: now + Self.stopDeadline) }
            if app.process?.stopsAreReported == true {
                apps.reportedStopsAwaited.insert(app.id)
                reportingStops = true
            }
            return
        }
        if apps.stopsAwaited.remove(app.id) != nil {
            timers.cancel(.stopCheck(app.id))
            timers.cancel(.stopDeadline(app.id))
            if let process = app.process { stopAwaitingFreeze(of: process) }
        }
        apps.reportedStopsAwaited.remove(app.id)
        if apps.reportedStopsAwaited.isEmpty { reportingStops = false }
    }

    /// Queues an input raised while performing actions.
    func feedLater(_ app: AppRecord, _ input: LifecycleInput) {
        apps.deferredInputs.append((app.id, input))
    }

    func drainDeferredInputs() {
        while true {
            if !apps.deferredInputs.isEmpty {
                let (id, input) = apps.deferredInputs.removeFirst()
                if let app = apps[id] { _ = handle(input, for: app) }
            } else if !apps.deferredStarts.isEmpty {
                settleWakeBookkeeping()
                performDeferredStart()
            } else if hasTransferWork {
                settleWakeBookkeeping()
                performTransferWork()
            } else {
                return
            }
        }
    }

    /// `decidedAt`: the lifecycle's `now` for this answer, which its timers count from.
    /// `only`: the actions to perform now, the others skipped (a wake's answer in two parts).
    private func perform(_ actions: [LifecycleAction], for app: AppRecord, resumedAt: Double?, decidedAt: MonotonicInstant,
                         only part: WakeBookkeeping.Part = .all) {
        // When the process was continued: the transition out of `suspended` happened then,
        // not after the bookkeeping between the SIGCONT (or thaw) and its record.
        var continuedAt = resumedAt
        // Looked at in place: an action skipped is not copied out of the array (a wake's
        // answer is gone through twice, once for each part).
        actions.withUnsafeBufferPointer { buffer in
            for index in buffer.indices where part.includes(buffer[index]) {
                switch buffer[index] {
                case .resume:
                    if continuedAt == nil {
                        continuedAt = wallClockSeconds()
                        resume(app)
                    }
                    resumedFromHibernation(app)
                case .suspend: suspend(app)
                case .deliver(let event): deliver(event, to: app)
                case .markSockets: markSockets(of: app)
                case .markReported(let readiness): markReported(readiness, of: app)
                case .armSockets: arm(app)
                case .disarmSockets: disarm(app)
                case .startTimer(let kind, let after):
                    timers.set(.app(app.id, kind), deadline: decidedAt + after, tolerance: configuration.timings.tolerance(of: kind, after: after))
                case .cancelTimer(let kind): timers.cancel(.app(app.id, kind))
                case .kill(let reason): send(SIGKILL, to: app, reason: reason.description)
                case .requestExit: send(SIGTERM, to: app, reason: "terminate requested")
                case .launch(let inBackground, let reason): relaunch(app, inBackground: inBackground, reason: reason)
                case .reclaimSockets(let reason): reclaimSockets(of: app, reason: reason)
                case .hibernate(let requested, let reason): hibernate(app, requested: requested, reason: reason)
                case .transition(let from, let to, let reason):
                    recordTransition(app, from: from, to: to, reason: reason, at: from == .suspended ? continuedAt : nil)
                    suspensionChanged(app, from: from, to: to)
                }
            }
        }
    }

    private func resume(_ app: AppRecord) {
        guard let process = app.process else { return }
        // Not the wake path (that one resumes before the lifecycle, and does not look).
        if process.stopEvidence != nil { noticeUnexpectedResume(of: app, restop: false) }
        do {
            try suspender.resume(process)
        } catch Errno.noSuchProcess {
            // Ended already: its end comes through its pidfd, and settles the app.
            log.info("\(app.name): pid \(process.pid) ended before it could be resumed")
        } catch {
            // Stopped or frozen still, while its lifecycle says it runs: its lifecycle ends it.
            log.warning("\(app.name): cannot resume pid \(process.pid): \(error); it is ended instead")
            feedLater(app, .resumeFailed("\(error)"))
        }
    }

    private func suspend(_ app: AppRecord) {
        guard let process = app.process else { return }
        // A process voipd may stop is in the state file first: a voipd that dies now leaves
        // the next one what it needs to continue it.
        saveStateUnlessRecorded(process, of: app)
        // Reports on before the signal: a stop that comes at once must be reported.
        if process.stopsAreReported { reportingStops = true }
        do {
            try suspender.suspend(process)
        } catch Errno.noSuchProcess {
            // Ended already: its end comes through its pidfd, and settles the app.
            return log.info("\(app.name): pid \(process.pid) ended before it could be stopped")
        } catch {
            // It runs on: left waiting for a stop that will not come, it would never be
            // suspended, nor ended. Its lifecycle ends it instead.
            log.warning("\(app.name): cannot suspend pid \(process.pid): \(error); it is ended instead")
            return feedLater(app, .stopFailed("\(error)"))
        }
        if let box = process.cgroup {
            // A freeze is usually done by now: looked at once, then as its schedule says.
            process.freezeConfirmation = FreezeConfirmation(version: box.cgroup.version)
            checkStop(app)
        } else if !process.stopsAreReported {
            // The kernel tells only a parent about stops: look, at once and then less and
            // less often.
            process.stopCheckDelay = .microseconds(200)
            checkStop(app)
        }
    }

    /// The one-line summary for the service manager's STATUS=.
    var statusLine: String {
        let suspended = apps.values.filter { $0.lifecycle.state == .suspended }.count
        let running = apps.values.filter { $0.lifecycle.phase.isAlive }.count
        return "\(running) apps running, \(suspended) suspended, \(registry.count) VoIP sockets held"
    }

    /// Confirms a stop from /proc (the process is not voipd's child, or a SIGCHLD arrived),
    /// or a freeze from its cgroup's state.
    func checkStop(_ app: AppRecord) {
        guard let process = app.process, app.lifecycle.phase == .suspending else { return }
        if suspender.isStopped(process) {
            if process.cgroup == nil { process.stopEvidence = StopEvidence(stopped: process) }
            feedLater(app, .stopConfirmed)
        } else if process.cgroup != nil {
            awaitFreeze(of: app, process)
        } else if !process.stopsAreReported {
            timers.set(.stopCheck(app.id), deadline: now + process.stopCheckDelay)
            process.stopCheckDelay = min(process.stopCheckDelay * 2, .milliseconds(100))
        }
    }

    /// How long a stop (or freeze) may take before the app is ended instead. A stop lands
    /// within microseconds, a freeze within a scheduler tick; one that has not landed after
    /// this never will while some task of the app sleeps in the kernel uninterruptibly (D
    /// state: a hung NFS server, a FUSE server that is itself frozen, a vfork parent whose
    /// child is stopped), and such an app neither runs nor is suspended. Real time, not
    /// scaled by `timeScale`: how long the kernel takes does not shrink with the tests' clock.
    static let stopDeadline: Duration = .seconds(5)

    /// The app's stop is still not confirmed ``stopDeadline`` after it was asked for: as iOS
    /// does with an app that cannot be suspended, it is dealt with. It is continued (or thawed)
    /// and ended as one whose stop failed (`suspendFailed`): told willTerminate if it can be,
    /// then killed; its held sockets stay, and data relaunches it.
    func stopDeadlinePassed(_ app: AppRecord) {
        guard app.lifecycle.phase == .suspending, let process = app.process else { return }
        // The last look, in case the stop landed since the previous one.
        if suspender.isStopped(process) { return checkStop(app) }
        let why = "not \(process.cgroup == nil ? "stopped" : "frozen") within \(Int(Self.stopDeadline.seconds)) s (a task in uninterruptible sleep?)"
        log.warning("\(app.name): pid \(process.pid) \(why); it is ended instead")
        feed(app, .stopFailed(why))
    }

    private func send(_ signal: CInt, to app: AppRecord, reason: String) {
        guard let process = app.process else { return }
        log.info("\(app.name): sending \(signalName(signal)) to pid \(process.pid): \(reason)")
        do {
            try process.send(signal)
            if signal == SIGKILL { metrics.count(kill: reason) }
        } catch {
            log.warning("\(app.name): cannot send \(signalName(signal)) to pid \(process.pid): \(error)")
        }
    }

    /// `time`: when it happened, if not now (a resume's, taken at its SIGCONT).
    private func recordTransition(_ app: AppRecord, from: AppState, to: AppState, reason: String, at time: Double? = nil) {
        let record = TransitionRecord(time: time ?? wallClockSeconds(), app: app.name, from: from, to: to, reason: reason)
        if to == .suspended { warnIfUnreachable(app) }
        app.since = record.time
        events.append(record)
        if notifier.isEnabled && !timers.contains(.serviceStatus) { timers.set(.serviceStatus, deadline: now + .seconds(1)) }
        metrics.transitions += 1
        let routine = (from == .background && to == .suspended) || (from == .suspended && to == .background)
        log.log(routine ? .debug : .info, "\(app.name): \(from.rawValue) → \(to.rawValue) (\(reason))")
        if !clients.followers.isEmpty { clients.pendingBroadcasts.append(record) }
        // Between background and suspended the state file has nothing new to say.
        if !routine { noteStateChange() }
        if to == .terminated { finishLaunchWaiters(app) }
    }
}

/// The directory part of a path ("" when there is none).
func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "" }
    return String(path[..<slash])
}

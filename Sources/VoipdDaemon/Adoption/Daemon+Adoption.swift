import Glibc
import VoipdAdoption
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Programs adopted without their cooperation (issue 15; docs/LIFECYCLE.md, "Adopted
/// programs"): voipd finds their VoIP sockets itself, holds copies of them like registered
/// ones, and, since such a program cannot say when it is done, suspends it in the background
/// only once it has measured it quiet.
extension Daemon {
    /// Adoption settings from a launch request: none without rules; a bad rule is the
    /// request's error.
    static func adoptionSettings(_ request: LaunchRequest) throws(ProtocolError) -> AdoptionSettings? {
        guard let rules = request.adopt, !rules.isEmpty else { return nil }
        guard rules.count <= 64 else { throw ProtocolError(.badRequest, "\(rules.count) adoption rules; at most 64") }
        do {
            return AdoptionSettings(policy: try AdoptionPolicy(parsing: rules))
        } catch {
            throw ProtocolError(.badRequest, "\(error)")
        }
    }

    /// Gives an app its adoption, or takes it away. The lifecycle learns of it through the
    /// app's policy (``AppPolicy/suspendsWhenQuiet``), which the caller sets.
    func setAdoption(_ settings: AdoptionSettings?, of app: AppRecord) {
        guard app.adoption?.settings != settings else { return }
        if let old = app.adoption {
            timers.cancel(.adoption(app.id))
            releaseAdoptedSockets(of: app, old)
        }
        app.adoption = settings.map(AdoptedProgram.init(settings:))
    }

    /// After each batch of an app's lifecycle actions: sample an adopted program while it
    /// runs in the background, and only then; look again after each time it ran. The first
    /// sample, and the look, come a sample interval after it was resumed, never in the turn
    /// right after the wake's SIGCONT: voipd's loop would take a CPU from the woken program
    /// while it handles what woke it (a call's INVITE). Its quiet window starts then.
    func noteAdoption(_ app: AppRecord) {
        guard let adoption = app.adoption ?? recoveredAdoption(of: app) else { return }
        let lifecycle = app.lifecycle
        if lifecycle.phase.isAlive, lifecycle.keepAliveInterval == nil, lifecycle.pendingTermination == nil {
            // It cannot ask for keep-alive wakes itself: they are what lets its own timers
            // re-register while it is suspended. Suspended already too: one taken back
            // suspended after voipd's restart has not run under this voipd yet.
            let minimum = lifecycle.keepAliveMinimum
            let interval = max(adoption.settings.keepAlive.map { $0 * configuration.timeScale } ?? minimum, minimum)
            if interval > .zero { feedLater(app, .setKeepAlive(interval)) }
        }
        let sampling = lifecycle.phase == .background && lifecycle.goal == .background && app.process != nil
        guard sampling != adoption.sampling else { return }
        adoption.sampling = sampling
        if sampling {
            adoption.detector.restart()
            adoption.arrivalMarks = [:]
            adoption.lookOwed = true
            timers.set(.adoption(app.id), deadline: now + adoption.sampleInterval)
        } else {
            timers.cancel(.adoption(app.id))
        }
    }

    static let rulesLost = "its adoption rules are not known to this voipd: it finds no new socket (those held before still wake it); launch it again"

    /// A held copy is named after its socket's inode: `adopted-INODE`.
    static let adoptedSocketPrefix = "adopted-"

    /// The adoption of a program whose policy says it is adopted but whose record has none:
    /// after an in-place upgrade or a restart, which carry the policy and the launch command,
    /// not the adoption. A manifest's rules are its own again, a `launch --adopt`'s come back
    /// from its launch command; without either (a record of a voipd that did not keep them)
    /// the program is still measured and suspended when quiet, with a warning that nothing
    /// new can wake it.
    private func recoveredAdoption(of app: AppRecord) -> AdoptedProgram? {
        guard app.lifecycle.policy.suspendsWhenQuiet else { return nil }
        let settings = apps.manifests[app.id]?.adoption ?? launchAdoption(of: app) ?? AdoptionSettings(policy: AdoptionPolicy(rules: []))
        let adoption = AdoptedProgram(settings: settings)
        // Copies an in-place upgrade carried over are the program's still.
        for held in registry.sockets(of: app.id) where held.origin == .adopted {
            if held.name.hasPrefix(Self.adoptedSocketPrefix), let inode = UInt64(held.name.dropFirst(Self.adoptedSocketPrefix.count)) {
                adoption.held[inode] = held.name
            }
        }
        app.adoption = adoption
        if settings.policy.rules.isEmpty { noteAdoptionWarning([Self.rulesLost], of: app) }
        return adoption
    }

    /// The rules its `launch --adopt` gave, read again from its launch command.
    private func launchAdoption(of app: AppRecord) -> AdoptionSettings? {
        guard let rules = app.launch?.adopt, !rules.isEmpty else { return nil }
        do {
            return AdoptionSettings(policy: try AdoptionPolicy(parsing: rules))
        } catch {
            // Written by a voipd that read rules this one does not.
            log.warning("\(app.name): its stored adoption rules are not understood: \(error)")
            return nil
        }
    }

    /// The sampling timer: look if the program ran since the last look, take an activity
    /// sample, and when the detector says quiet, look once more (connections come and go)
    /// and let the lifecycle suspend it.
    func adoptionTimerFired(_ app: AppRecord) {
        guard let adoption = app.adoption, adoption.sampling, let process = app.process else { return }
        if adoption.lookOwed { look(at: app) }
        // The whole program: with a cgroup, helpers that left its process tree count too.
        let members: [pid_t]
        do {
            members = try process.members(limit: SocketDiscoveryLimits().processes).processes
        } catch {
            // Gone a moment ago (its end is on its way) or an unreadable cgroup: the process alone.
            members = [process.pid]
        }
        // A call's INVITE read in a window's last moments barely shows in the program's
        // activity; suspended then, the call would wait for a re-send or a keep-alive. What
        // arrives on its VoIP sockets starts the window again, read or not.
        if arrivedSinceLastSample(app, adoption) { adoption.detector.restart() }
        let verdict = adoption.detector.observe(ProcFS.activity(of: members), unreadSockets: unreadAdoptedSockets(of: app))
        adoption.verdict = verdict
        if verdict.isQuiet {
            look(at: app)
            // The look reads each socket's queue in the kernel's tables: what arrived since.
            let unread = adoption.report?.adopted.filter { $0.socket.hasUnreadData }.count ?? 0
            if unread == 0 {
                log.debug("\(app.name): \(verdict)")
                feed(app, .quietMeasured)
                return
            }
            adoption.verdict = .unreadData(sockets: unread)
        }
        timers.set(.adoption(app.id), deadline: now + adoption.sampleInterval)
    }

    /// Whether anything arrived on its adopted sockets since the last sample, read by the
    /// program or not; the marks for the next sample are taken before looking, so that an
    /// arrival in between shows in one of the two.
    private func arrivedSinceLastSample(_ app: AppRecord, _ adoption: AdoptedProgram) -> Bool {
        var arrived = false
        var marks: [UInt64: ReceiveMark] = [:]
        for held in registry.sockets(of: app.id) where held.origin == .adopted {
            marks[held.id] = ReceiveMark.take(of: held.descriptor, kind: held.socketKind)
            if let mark = adoption.arrivalMarks[held.id], mark.hasArrivedSince(on: held.descriptor) { arrived = true }
        }
        adoption.arrivalMarks = marks
        return arrived
    }

    /// The held copies with something unread: bytes or a datagram (FIONREAD), or a
    /// connection waiting to be accepted.
    private func unreadAdoptedSockets(of app: AppRecord) -> Int {
        registry.sockets(of: app.id).filter { held in
            held.origin == .adopted && held.hasWaiting
        }.count
    }

    /// Finds the program's sockets, decides which are its VoIP sockets, takes copies of the
    /// new ones (`pidfd_getfd`, checked to be the socket found) and lets go of those no longer
    /// adopted or gone. Whatever it could not do is kept as a warning for `status` and logged
    /// when it changes: nothing fails silently.
    func look(at app: AppRecord) {
        guard let adoption = app.adoption, let process = app.process else { return }
        adoption.lookOwed = false
        adoption.lastLook = wallClockSeconds()
        var problems: [String] = []
        defer { noteAdoptionWarning(problems, of: app) }
        guard !adoption.settings.policy.rules.isEmpty else { return problems.append(Self.rulesLost) }
        let discovery: SocketDiscovery
        do {
            // Its cgroup, when it has one, is the whole program: a helper that double-forked
            // or called setsid is no longer below the process voipd started, but still in it.
            discovery = try SocketDiscovery.discover(root: process.pid, cgroup: process.cgroup?.cgroup.path,
                                                     transports: adoption.settings.policy.transports, method: .descriptors)
        } catch {
            problems.append("cannot look at its sockets: \(error)")
            return
        }
        let report = adoption.settings.policy.apply(to: discovery.sockets.map(\.socket))
        adoption.report = report
        if let warning = report.warning { problems.append(warning) }
        if !discovery.limitsReached.isEmpty { problems.append("looked only so far: \(discovery.limitsReached.map(\.description).joined(separator: ", "))") }
        for (pid, error) in discovery.unreadable { problems.append("cannot read the descriptors of pid \(pid): \(error)") }

        let wanted = report.adoptedInodes
        for (inode, name) in adoption.held where !wanted.contains(inode) {
            adoption.held[inode] = nil
            if let held = registry.socket(app: app.id, name: name) {
                log.info("\(app.name): no longer holding \(held.kind)")
                release(held)
            }
        }
        let quota = socketQuota(of: app.id)
        for decision in report.adopted where adoption.held[decision.socket.inode] == nil {
            guard let found = discovery.sockets.first(where: { $0.socket.inode == decision.socket.inode }) else { continue }
            guard registry.count(of: app.id) < quota else {
                problems.append("holds its quota of \(quota) VoIP sockets: \(decision.socket) and later ones not adopted")
                break
            }
            let name = Self.adoptedSocketPrefix + "\(decision.socket.inode)"
            // Held already under its name (by an earlier voipd): the same socket, kept.
            if registry.socket(app: app.id, name: name) != nil {
                adoption.held[decision.socket.inode] = name
                continue
            }
            do {
                let copy = try found.takeCopy(root: process.pidfd)
                try hold(copy, app: app, name: name, kind: "\(decision.socket)", origin: .adopted)
                adoption.held[decision.socket.inode] = name
                log.info("\(app.name): adopted \(decision.socket) (\(decision.reasons.joined(separator: "; ")))")
            } catch {
                problems.append("cannot take \(decision.socket): \(error)")
            }
        }
    }

    private func noteAdoptionWarning(_ problems: [String], of app: AppRecord) {
        guard let adoption = app.adoption else { return }
        let warning = problems.isEmpty ? nil : problems.joined(separator: "; ")
        if warning != adoption.warning, let warning { log.warning("\(app.name): \(warning)") }
        adoption.warning = warning
    }

    /// Closes the copies of an adopted program's sockets: when its process ends (they cannot
    /// be handed back, and a held listener or bound UDP port would make the relaunched
    /// program's `bind` fail with `EADDRINUSE`), or when it is no longer adopted.
    func releaseAdoptedSockets(of app: AppRecord, _ adoption: AdoptedProgram? = nil) {
        // Every copy held, not only those the adoption lists: a voipd started after a crash
        // copies a program's sockets back one by one, and its adoption, recovered as the
        // first comes back, lists that one alone until the program is looked at again.
        for held in registry.sockets(of: app.id) where held.origin == .adopted { release(held) }
        guard let adoption = adoption ?? app.adoption else { return }
        adoption.held.removeAll()
        adoption.report = nil
        adoption.verdict = nil
        adoption.sampling = false
        adoption.lookOwed = true
        timers.cancel(.adoption(app.id))
    }
}

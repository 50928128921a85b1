import Glibc
import VoipdLifecycle
import VoipdProtocol
import VoipdSystem
import VoipdVocabulary

/// Hibernation (seed 004): a suspended app whose dirty memory is within the limit has its
/// whole address space paged out with `process_madvise(MADV_PAGEOUT)`, a slice per turn of
/// the loop; one above it stays suspended and is the first to end under memory pressure.
/// The lifecycle decides when (``LifecycleAction/hibernate(requested:reason:)``); to it
/// the app stays suspended.
extension Daemon {
    /// The processes of an app that hibernation looks at: the app's and its helpers'.
    static let hibernationProcessLimit = 64

    /// Measures the app and starts its page-out, or marks it as too large.
    func hibernate(_ app: AppRecord, requested: Bool, reason: String) {
        hibernations.lastRefusal = nil
        guard let process = app.process, app.lifecycle.phase == .suspended else { return }
        if let disabled = hibernations.disabled {
            return refuseHibernation(app, "hibernation is off: \(disabled)", requested: requested)
        }
        if case .pagingOut? = hibernations.state(of: app.id, pid: process.pid) { return }
        let swap = currentSwap()
        if swap == nil && !requested {
            if !hibernations.saidNoSwap {
                hibernations.saidNoSwap = true
                log.notice("no swap space: suspended apps are not hibernated (their memory would have nowhere to go); "
                           + "voipctl hibernate still pages out what files back")
            }
            return
        }
        let members: [pid_t]
        let memory: ProcessMemory
        do {
            members = try hibernationMembers(of: process)
            memory = try ProcessMemory.of(processes: members)
        } catch {
            return refuseHibernation(app, "cannot measure its memory: \(error)", requested: requested)
        }
        let limit = configuration.hibernation.dirtyLimit
        guard memory.dirty <= limit else {
            hibernations.apps[app.id] = .overLimit(pid: process.pid, dirty: memory.dirty)
            let message = "stays suspended: \(megabytes(memory.dirty)) dirty, over the \(megabytes(limit)) limit; first to end under memory pressure"
            log.notice("\(app.name): \(message) (\(reason))")
            hibernations.lastRefusal = message
            return
        }
        var targets: [PageOutTarget] = []
        for pid in members {
            do {
                let helper: PidFd? = pid == process.pid ? nil : try PidFd(pid: pid)
                targets.append(PageOutTarget(pid: pid, pidfd: helper, regions: try MemoryMap.regions(of: pid)))
            } catch {
                log.debug("\(app.name): pid \(pid) not paged out: \(error)")
            }
        }
        // A helper's pid may have been reused between the listing and pidfd_open: the process
        // each pidfd names must still be one of the app's (a stopped app starts none).
        let stillMembers: Set<pid_t>
        do {
            stillMembers = Set(try hibernationMembers(of: process))
        } catch {
            return refuseHibernation(app, "cannot list its processes again: \(error)", requested: requested)
        }
        targets.removeAll { !stillMembers.contains($0.pid) }
        let job = PageOut(pid: process.pid, reason: reason, targets: targets, before: MemoryCounters.sum(targets.map(\.pid)),
                          dirty: memory.dirty, swap: swap, startedAt: now)
        hibernations.apps[app.id] = .pagingOut(job)
        log.info("\(app.name): hibernating (\(reason)): \(megabytes(memory.dirty)) dirty, \(targets.count) processes, into \(swap ?? "no swap")")
        scheduleHibernationSlice()
    }

    /// The app's processes: its cgroup's members when it has one (the freezer: helpers that
    /// left the process tree are found too), otherwise its process and those below it.
    private func hibernationMembers(of process: AppProcess) throws -> [pid_t] {
        try process.members(limit: Self.hibernationProcessLimit).processes
    }

    /// Where paged-out anonymous memory would go now ("zram0 (lzo-rle)", "/swapfile"), or nil.
    private func currentSwap() -> String? {
        let space: SwapSpace
        do {
            space = try SwapSpace.current()
        } catch {
            log.warning("cannot read the swap areas: \(error)")
            return nil
        }
        guard space.isAvailable, let area = space.areas.filter({ $0.size > $0.used }).max(by: { $0.priority < $1.priority }) else {
            return nil
        }
        guard let device = area.zramDevice else { return "\(area.kind.rawValue) \(area.path)" }
        do {
            return "\(device) (\(try ZramDevice.read(device).algorithm))"
        } catch {
            return device
        }
    }

    private func refuseHibernation(_ app: AppRecord, _ message: String, requested: Bool) {
        hibernations.lastRefusal = message
        log.log(requested ? .notice : .debug, "\(app.name): not hibernated: \(message)")
    }

    private func scheduleHibernationSlice() {
        if !timers.contains(.hibernationSlice) { timers.set(.hibernationSlice, deadline: now) }
    }

    /// One slice of the page-outs under way (`hibernation.sliceMB`), the apps in name order;
    /// the next slice waits for the next turn of the loop, so that nothing waits long behind it.
    func pageOutSlice() {
        // Data on a held socket goes first: a wake must not wait behind a page-out.
        serveHeldSockets()
        var budget = configuration.hibernation.slice
        pageOuts: for name in hibernations.apps.keys.sorted() where budget > 0 {
            guard case .pagingOut(let job)? = hibernations.apps[name] else { continue }
            guard let app = apps[name], let process = app.process, process.pid == job.pid else {
                endPageOut(job, of: name, "ended")
                continue
            }
            // Woken by the held sockets just served, before its resume's bookkeeping
            // (``resumedFromHibernation(_:)``) was done.
            guard app.lifecycle.phase == .suspended else {
                endPageOut(job, of: name, "was resumed")
                continue
            }
            while budget > 0, let target = job.targets.first(where: { !$0.advice.isFinished }) {
                do {
                    budget -= min(try target.perform(upTo: budget, app: process.pidfd), budget)
                    if !target.advice.isFinished { budget = 0 }
                } catch Errno.noSuchProcess where target.pid == job.pid {
                    // The app's own process: killed, its end not yet seen. Not hibernated.
                    endPageOut(job, of: name, "ended")
                    continue pageOuts
                } catch Errno.noSuchProcess {
                    job.targets.removeAll { $0 === target }
                } catch let error as Errno where error == .notPermitted || error == .notImplemented {
                    return disableHibernation(error)
                } catch {
                    log.warning("\(name): pid \(target.pid) not paged out further: \(error)")
                    job.targets.removeAll { $0 === target }
                }
            }
            if job.isFinished { finishPageOut(app, job) }
        }
        if hibernations.pageOutsUnderWay { scheduleHibernationSlice() }
    }

    /// Without `CAP_SYS_NICE` (EPERM) or on a kernel without process_madvise (ENOSYS), no
    /// page-out can work: say so once and stop trying.
    private func disableHibernation(_ error: Errno) {
        let why = error == .notPermitted
            ? "process_madvise is not permitted (voipd needs CAP_SYS_NICE and ptrace rights over the apps): \(error)"
            : "this kernel has no process_madvise (Linux 5.10 or later): \(error)"
        hibernations.disabled = why
        log.warning("hibernation is off: \(why)")
        for (name, state) in hibernations.apps {
            guard case .pagingOut(let job) = state else { continue }
            hibernations.apps[name] = nil
            answerHibernationWaiter(job, app: apps[name], error: ProtocolError(.invalidState, "hibernation is off: \(why)"))
        }
    }

    private func finishPageOut(_ app: AppRecord, _ job: PageOut) {
        let after = MemoryCounters.sum(job.targets.map(\.pid))
        let done = HibernatedApp(pid: job.pid, dirty: job.dirty, before: job.before, after: after, swap: job.swap, duration: now - job.startedAt)
        hibernations.apps[app.id] = .hibernated(done)
        let refused = job.refused
        if !refused.isEmpty {
            let bytes = refused.reduce(UInt64(0)) { $0 + UInt64($1.length) }
            log.debug("\(app.name): \(refused.count) ranges (\(megabytes(bytes))) not paged out: \(Set(refused.map(\.error.description)).sorted().joined(separator: "; "))")
        }
        let figures = "resident \(megabytes(job.before.resident)) → \(megabytes(after.resident)), in \(Int(done.duration.seconds * 1000)) ms"
        if let swap = job.swap {
            log.notice("\(app.name): hibernated (\(job.reason)): \(figures), \(megabytes(after.swapped)) in swap (\(swap))")
        } else {
            let fileBacked = job.before.residentFile - min(after.residentFile, job.before.residentFile)
            log.notice("\(app.name): no swap: \(megabytes(fileBacked)) of file-backed pages paged out; anonymous memory stays resident (\(figures))")
        }
        answerHibernationWaiter(job, app: app, error: nil)
    }

    /// A page-out that cannot go on: the app `what` (ended, was resumed) first. The
    /// `voipctl hibernate` waiting for it is told so.
    private func endPageOut(_ job: PageOut, of name: AppID, _ what: String) {
        endPageOut(job, of: name, saying: "\(name.name) \(what) before its page-out was done")
    }

    private func endPageOut(_ job: PageOut, of name: AppID, saying message: String) {
        hibernations.apps[name] = nil
        log.info("\(name.name): page-out ended: \(message)")
        answerHibernationWaiter(job, app: apps[name], error: ProtocolError(.invalidState, message))
    }

    /// Before an in-place upgrade: page-outs are not carried over (the new program would
    /// not go on with them, nor answer the `voipctl hibernate` waiting), so each ends here,
    /// its request told to ask again. What was paged out stays so; the app stays suspended.
    func endPageOutsBeforeUpgrade() {
        endPageOuts { "voipd was upgraded in place before \($0)'s page-out was done: ask again" }
    }

    /// Before a shutdown (SIGTERM): the app is resumed with every suspended app, and the
    /// `voipctl hibernate` waiting is told why its page-out ends, before its connection closes.
    func endPageOutsBeforeShutdown() {
        endPageOuts { "voipd stopped before \($0)'s page-out was done" }
    }

    private func endPageOuts(saying message: (String) -> String) {
        for (name, state) in hibernations.apps {
            guard case .pagingOut(let job) = state else { continue }
            endPageOut(job, of: name, saying: message(name.name))
        }
    }

    private func answerHibernationWaiter(_ job: PageOut, app: AppRecord?, error: ProtocolError?) {
        guard let waiter = job.waiter, let client = clients[waiter.client] else { return }
        job.waiter = nil
        if let error {
            sendError(error, request: waiter.request, to: client)
        } else if let app {
            reply(waiter.request, AppResult(app: status(of: app)), to: client)
        }
    }

    /// The app was resumed: its hibernation ends, and a page-out still under way stops
    /// where it is (the pages it has put out come back as the app touches them).
    func resumedFromHibernation(_ app: AppRecord) {
        guard let state = hibernations.apps.removeValue(forKey: app.id) else { return }
        switch state {
        case .pagingOut(let job):
            let left = job.targets.reduce(UInt64(0)) { $0 + $1.advice.remainingBytes }
            log.info("\(app.name): resumed while being paged out; \(megabytes(left)) of it not paged out")
            answerHibernationWaiter(job, app: app, error: ProtocolError(.invalidState, "\(app.name) was resumed before its page-out was done"))
        case .hibernated(let done):
            log.info("\(app.name): woken from hibernation after \(megabytes(done.after.swapped)) went to swap")
        case .overLimit:
            break
        }
    }

    /// `voipctl hibernate`: answered when the page-out is done, or at once when it does not start.
    func hibernateRequested(_ app: AppRecord, request: UInt64, from client: ClientConnection) throws {
        let outcome = feed(app, .hibernateRequested)
        if case .rejected(let reason) = outcome.reply { throw ProtocolError(.invalidState, reason) }
        switch hibernations.state(of: app.id, pid: app.process?.pid) {
        case .pagingOut(let job)? where job.waiter == nil:
            job.waiter = (client.id, request)
        case .overLimit? , nil:
            throw ProtocolError(.invalidState, "\(app.name) \(hibernations.lastRefusal ?? "was not hibernated")")
        default:
            reply(request, AppResult(app: status(of: app)), to: client)
        }
    }

    /// The app's hibernation as `status` reports it.
    func hibernationStatus(of app: AppRecord) -> HibernationStatus? {
        guard app.lifecycle.phase == .suspended, let state = hibernations.state(of: app.id, pid: app.process?.pid) else { return nil }
        let limit = configuration.hibernation.dirtyLimit
        switch state {
        case .pagingOut(let job): return HibernationStatus(state: .pagingOut, dirtyBytes: job.dirty, limitBytes: limit, swap: job.swap)
        case .hibernated(let done): return HibernationStatus(state: .hibernated, dirtyBytes: done.dirty, limitBytes: limit, swap: done.swap)
        case .overLimit(_, let dirty): return HibernationStatus(state: .overLimit, dirtyBytes: dirty, limitBytes: limit, swap: nil)
        }
    }

    /// Whether the app was found too large to hibernate (seed 004: it is ended first).
    func isOverHibernationLimit(_ app: AppRecord) -> Bool {
        guard app.lifecycle.phase == .suspended, case .overLimit? = hibernations.state(of: app.id, pid: app.process?.pid) else { return false }
        return true
    }
}

import Glibc
import VoipdSystem

/// An app's cgroup, in a class so that an ``AppProcess`` can hold it (``AppCgroup`` is
/// not copyable).
final class AppCgroupBox {
    let cgroup: AppCgroup

    init(_ cgroup: consuming AppCgroup) { self.cgroup = cgroup }
}

/// How voipd suspends its apps: each process with a cgroup of its own (``AppProcess/cgroup``)
/// through the cgroup freezer, any other (adopted, or started while there was no freezer)
/// with SIGSTOP and SIGCONT (docs/LIFECYCLE.md, "Suspension backends").
struct AppSuspender: Suspender {
    /// Where the apps' cgroups are made; nil: every app is suspended with signals.
    let freezer: CgroupFreezer?
    /// Why there is no freezer, when there is none.
    let unavailability: String?
    /// This voipd's name among others on the machine (``CgroupFreezer/instanceName(forSocket:)``):
    /// its directory in the v1 freezer hierarchy, whether it uses it or not.
    let instance: String
    /// The name a voipd of before names were cut gave this instance's directory, when it is
    /// another (``CgroupFreezer/formerInstanceName(forSocket:)``).
    let formerInstance: String?

    /// Chooses as the configuration says: with `auto`, the freezer where voipd can use it;
    /// with `freezer`, the freezer or an error saying why not; with `signal`, signals.
    init(_ configuration: DaemonConfiguration) throws(ConfigurationError) {
        instance = CgroupFreezer.instanceName(forSocket: configuration.socketPath)
        formerInstance = CgroupFreezer.formerInstanceName(forSocket: configuration.socketPath)
        guard configuration.suspension != .signal else {
            freezer = nil
            unavailability = "the configuration's suspension is \"signal\""
            return
        }
        switch CgroupFreezer.detect(configuredDirectory: configuration.cgroupDirectory, instance: instance) {
        case .available(let found):
            freezer = found
            unavailability = nil
        case .unavailable(let reason):
            guard configuration.suspension == .auto else {
                throw ConfigurationError(key: "suspension", "\"freezer\", but voipd cannot use the cgroup freezer: \(reason)")
            }
            freezer = nil
            unavailability = reason
        }
    }

    var name: String {
        if let freezer { return "\(freezer) for the apps voipd launches, SIGSTOP for the others" }
        return "SIGSTOP (no cgroup freezer: \(unavailability ?? "not chosen"))"
    }

    /// The backend one process is suspended with, as `status` says it.
    static func backend(of process: AppProcess) -> String {
        process.cgroup.map { "cgroup \($0.cgroup.version.rawValue) freezer" } ?? "SIGSTOP"
    }

    func suspend(_ process: AppProcess) throws {
        if let box = process.cgroup { try box.cgroup.freeze() } else { try SignalSuspender().suspend(process) }
    }

    func resume(_ process: AppProcess) throws {
        if let box = process.cgroup { return try box.cgroup.thaw() }
        try SignalSuspender().resume(process)
        process.stopEvidence = nil
    }

    func isStopped(_ process: AppProcess) -> Bool {
        guard let box = process.cgroup else { return SignalSuspender().isStopped(process) }
        do {
            return try box.cgroup.isFrozen()
        } catch {
            // A cgroup that cannot be read is not known to be frozen: the stop's deadline decides.
            return false
        }
    }
}

extension Daemon {
    /// The cgroup an app's next process starts in, made (or an empty one left by an earlier
    /// run taken over, thawed); nil when apps are suspended with signals.
    func makeCgroup(for app: AppRecord) throws -> AppCgroupBox? {
        guard let freezer = suspender.freezer else { return nil }
        do {
            return AppCgroupBox(try freezer.makeAppCgroup(for: app.name))
        } catch Errno.resourceBusy {
            // Processes of an earlier run are still in it (helpers of a process that ended):
            // they go, and the launch is refused rather than mixed with them.
            let leftover = try freezer.openAppCgroup(for: app.name)
            try leftover.thaw()
            try leftover.killAll()
            throw Errno(EBUSY, call: "\(leftover.path) still had processes of an earlier run: killed; launch again")
        }
    }

    /// A process taken over from an earlier voipd (restart or upgrade) gets its cgroup back
    /// when the kernel says it is in its app's cgroup in voipd's directory: the kernel's
    /// own record, which no state file can contradict.
    func attachCgroup(to process: AppProcess, of app: AppRecord) {
        guard process.cgroup == nil, let freezer = suspender.freezer else { return }
        let path = freezer.directory + "/" + CgroupFreezer.cgroupName(forApp: app.name)
        process.cgroup = openCgroup(path, version: freezer.version, holding: process.pid, of: app.name)
    }

    /// The cgroup at `path`, opened, if the kernel says `pid` is in it (/proc/PID/cgroup);
    /// nil otherwise, or when it cannot be opened (said in the log).
    func openCgroup(_ path: String, version: CgroupVersion, holding pid: pid_t, of app: String) -> AppCgroupBox? {
        guard let membership = ProcFS.read("/proc/\(pid)/cgroup"), let tables = CgroupTables.current() else { return nil }
        let lines = CgroupTables.membership(membership)
        let mounts = tables.mounts.filter { version == .v2 ? $0.version == .v2 : $0.isV1Freezer }
        guard let inside = version == .v2 ? lines.unified : lines.legacy["freezer"],
              mounts.contains(where: { $0.directory(of: inside) == path }) else { return nil }
        do {
            return AppCgroupBox(try AppCgroup(path: path, version: version))
        } catch {
            log.warning("\(app): pid \(pid) is in its cgroup \(path), which cannot be opened: \(error); suspended with SIGSTOP")
            return nil
        }
    }

    /// After an app's process ended: whatever is left in its cgroup (helpers) is killed and
    /// the cgroup removed; one whose processes have not ended yet is left for the next
    /// launch, which takes it over once empty.
    func releaseCgroup(of process: AppProcess, of app: AppRecord) {
        guard let box = process.cgroup else { return }
        stopAwaitingFreeze(of: process)
        process.cgroup = nil
        do {
            if try box.cgroup.isPopulated() {
                try box.cgroup.thaw()
                try box.cgroup.killAll()
            }
            try box.cgroup.remove()
            releaseLeftoverLegacyDirectory(holding: box.cgroup.path)
        } catch Errno.resourceBusy {
            log.info("\(app.name): its cgroup \(box.cgroup.path) still has processes, killed; removed at its next launch")
        } catch {
            log.warning("\(app.name): cannot remove its cgroup \(box.cgroup.path): \(error)")
        }
    }

    /// At start, after every app was taken back: an app cgroup that no process of an app
    /// is in is thawed (nothing stays frozen with no one to thaw it) and removed if empty; so
    /// is one in a directory an earlier voipd of this instance made in the v1 freezer
    /// hierarchy that this one does not use (it suspends otherwise: configured for signals,
    /// or given a v2 cgroup now; or the directory has the name of before names were cut),
    /// and that directory goes once empty: a crash leaves it behind, with no one else to
    /// remove it.
    func releaseUnclaimedCgroups() {
        if let freezer = suspender.freezer { releaseUnclaimedCgroups(in: freezer) }
        for leftover in leftoverLegacyFreezers() {
            releaseUnclaimedCgroups(in: leftover)
            leftover.removeInstanceDirectory()
        }
    }

    private func releaseUnclaimedCgroups(in freezer: CgroupFreezer) {
        let claimed = Set(apps.values.compactMap { $0.process?.cgroup?.cgroup.path })
        let names: [String]
        do {
            names = try freezer.appsWithCgroups()
        } catch {
            return log.warning("cannot list the app cgroups in \(freezer.directory): \(error)")
        }
        for name in names {
            do {
                let cgroup = try freezer.openAppCgroup(for: name)
                guard !claimed.contains(cgroup.path) else { continue }
                try cgroup.thaw()
                if try cgroup.isPopulated() {
                    log.notice("cgroup \(cgroup.path) has processes voipd does not know: thawed, left alone")
                } else {
                    try cgroup.remove()
                }
            } catch {
                log.warning("cannot release the cgroup of \(name) in \(freezer.directory): \(error)")
            }
        }
    }

    /// The directories earlier voipds of this instance made in the v1 freezer hierarchy, under
    /// its name and its former one, that are there and that this voipd does not use.
    private func leftoverLegacyFreezers() -> [CgroupFreezer] {
        [suspender.instance, suspender.formerInstance].compactMap { instance in
            guard let instance, let directory = CgroupFreezer.legacyDirectory(instance: instance), directory != suspender.freezer?.directory,
                  access(directory, F_OK) == 0 else { return nil }
            return CgroupFreezer(version: .v1, directory: directory, origin: .legacyHierarchy)
        }
    }

    /// After an app cgroup at `path` was removed: if it was in an earlier voipd's directory
    /// in the v1 freezer hierarchy (the app outlived that voipd, and this one took it back
    /// there), the directory goes once no app cgroup is left in it.
    private func releaseLeftoverLegacyDirectory(holding path: String) {
        for leftover in leftoverLegacyFreezers() where parentDirectory(of: path) == leftover.directory {
            leftover.removeInstanceDirectory()
        }
    }
}

import Glibc
import VoipdSystem
import VoipdTestSupport

/// A cgroup of the test's own, `voipd-test-PID-RANDOM` at the top of a mounted hierarchy (v2,
/// or v1's freezer), with everything made under it removed when the test is done, also when
/// it fails (``tearDown()`` runs from `deinit` too): every cgroup in it thawed, its processes
/// killed and waited for, then removed, deepest first.
final class ScratchCgroup {
    let version: CgroupVersion
    let mount: CgroupMount
    let path: String

    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    /// Why a scratch cgroup cannot be made here; nil when it can.
    static func unavailability(_ version: CgroupVersion) -> String? {
        guard geteuid() == 0 else { return "needs root, to make cgroups of its own" }
        guard let mount = mount(version) else {
            return version == .v2 ? "no cgroup2 file system is mounted" : "no cgroup v1 freezer hierarchy is mounted"
        }
        guard access(mount.mountPoint, W_OK) == 0 else { return "\(mount.mountPoint) is not writable" }
        return nil
    }

    /// For `.enabled(if:)`: run when it can, and under CI also when it cannot, where it then
    /// fails; but cgroup v1 only where the machine mounts its freezer hierarchy (a machine with
    /// cgroup v2 alone has no v1 freezer to test, and voipd uses v2 there).
    static func availableOrCI(_ version: CgroupVersion) -> Bool {
        unavailability(version) == nil || (runningUnderCI && (version == .v2 || mount(.v1) != nil))
    }

    /// The hierarchy's mount showing its root (not a bind-mounted subtree).
    static func mount(_ version: CgroupVersion) -> CgroupMount? {
        CgroupTables.current()?.mounts.first { $0.root == "/" && (version == .v2 ? $0.version == .v2 : $0.isV1Freezer) }
    }

    init(_ version: CgroupVersion) throws {
        if let reason = Self.unavailability(version) { throw Unavailable(description: reason) }
        self.version = version
        mount = Self.mount(version)!
        path = mount.mountPoint + "/voipd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        if mkdir(path, 0o755) != 0 { throw Errno.current("mkdir(\(path))") }
    }

    /// A freezer whose apps' cgroups go in this one, as a configured `freezerDirectory` puts them.
    var freezer: CgroupFreezer { CgroupFreezer(version: version, directory: path, origin: .configured) }

    /// The path of a cgroup under this one in the hierarchy, as /proc/PID/cgroup names it.
    func cgroupPath(of directory: String) -> String { mount.cgroupPath(of: directory)! }

    deinit { tearDown() }

    /// Removes the scratch cgroup and everything under it; returns what could not be removed
    /// (empty when the test left nothing behind).
    @discardableResult
    func tearDown() -> [String] { removeCgroupTree(path, version: version) }
}

/// Removes the cgroup `path` and everything under it, deepest first, each thawed and its
/// processes killed and waited for; returns what could not be removed (nothing when it does
/// not exist).
@discardableResult
func removeCgroupTree(_ path: String, version: CgroupVersion) -> [String] {
    guard access(path, F_OK) == 0 else { return [] }
    var leftovers: [String] = []
    removeCgroup(path, version: version, into: &leftovers)
    return leftovers
}

private func removeCgroup(_ directory: String, version: CgroupVersion, into leftovers: inout [String]) {
    for entry in directoryEntries(directory) where entry.isDirectory {
        removeCgroup(directory + "/" + entry.name, version: version, into: &leftovers)
    }
    emptyCgroup(directory, version: version)
    // A process killed a moment ago has left cgroup.procs but may still be freeing its
    // memory, and the cgroup is populated until it is done (v2 notifies that change).
    let deadline = Deadline(.seconds(10))
    while rmdir(directory) != 0 {
        guard errno == EBUSY, !deadline.hasPassed else { return leftovers.append("\(directory): \(Errno.current("rmdir"))") }
        if version == .v2, let events = try? openFile(directory + "/cgroup.events", flags: O_RDONLY),
           (ProcFS.read(directory + "/cgroup.events") ?? "").contains("populated 1") {
            _ = try? events.readToEnd(limit: 4096)
            var poller = pollfd(fd: events.rawValue, events: Int16(POLLPRI), revents: 0)
            _ = poll(&poller, 1, min(100, deadline.remainingMilliseconds))
        } else {
            _ = poll(nil, 0, 1)
        }
    }
}

/// Thaws the cgroup, then kills its processes and waits for each to end, round after
/// round while new ones appear (a process forking as it was killed).
private func emptyCgroup(_ directory: String, version: CgroupVersion) {
    if let control = try? openFile(directory + (version == .v2 ? "/cgroup.freeze" : "/freezer.state"), flags: O_WRONLY) {
        try? control.writeAll(Array((version == .v2 ? "0" : "THAWED").utf8))
    }
    for _ in 0..<50 {
        let pids = (ProcFS.read(directory + "/cgroup.procs") ?? "").split(separator: "\n").compactMap { pid_t($0) }
        if pids.isEmpty { return }
        let processes = pids.compactMap { try? ProcessHandle(pid: $0) }
        processes.forEach { try? $0.pidfd.send(SIGKILL) }
        let deadline = Deadline(.seconds(10))
        for process in processes {
            _ = waitReadable(process.pidfd.descriptor.rawValue, deadline)
            // A child of this process is reaped; another's is its parent's business.
            _ = try? process.pidfd.reapIfExited()
        }
    }
}

/// What a voipd on `socketPath` made in cgroup v1's freezer hierarchy and left there
/// (`voipd/INSTANCE`, and its apps' cgroups in it), removed once the voipd has ended, with
/// `voipd` itself when no other instance uses it. A voipd stopping for good removes it
/// itself, but not one killed (as tests kill voipd, to restart it or to end it), nor an app's
/// cgroup whose process was still ending as voipd stopped. Nothing when voipd made none.
func removeLegacyFreezerDirectory(socketPath: String) {
    guard let directory = CgroupFreezer.legacyDirectory(instance: CgroupFreezer.instanceName(forSocket: socketPath)),
          access(directory, F_OK) == 0 else { return }
    removeCgroupTree(directory, version: .v1)
    // Refused (EBUSY) while another instance's directory is in it.
    if let slash = directory.lastIndex(of: "/") { rmdir(String(directory[..<slash])) }
}

/// A pidfd in a class, to be kept in arrays.
final class ProcessHandle {
    let pidfd: PidFd

    init(pid: pid_t) throws { pidfd = try PidFd(pid: pid) }

    init(_ pidfd: consuming PidFd) { self.pidfd = pidfd }
}

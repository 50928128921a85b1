import CVoipd
import Glibc

/// One app's cgroup, open: the suspension backend behind a cgroup freezer. Every process of
/// the app (its helpers, their children, all their threads) is in it from the start
/// (``spawnTarget()``), and freezes and thaws with it; a frozen task is not stopped (its
/// state stays S or D, a parent's `waitpid` sees nothing, and no one's SIGCONT resumes it).
///
/// Nothing here blocks: ``freeze()`` asks, ``isFrozen()`` reads whether the kernel has
/// finished (one `pread`, a few microseconds). Under v2 the kernel also says when the state
/// changes (``notifiesChanges``): ``stateFile`` becomes readable with `EPOLLPRI` (not `EPOLLIN`: kernfs
/// files always poll readable), and stays so until ``isFrozen()`` or ``isPopulated()`` reads
/// it; but the kernel sends at most one such notification per 10 ms per file and defers the
/// rest, so a freeze soon after a thaw is reported up to ~20 ms late. Confirm a freeze by
/// reading at once, then as ``FreezeConfirmation`` schedules, with `EPOLLPRI` as the last word.
public struct AppCgroup: ~Copyable {
    /// The cgroup's directory.
    public let path: String
    public let version: CgroupVersion
    /// The cgroup's directory, open (`O_RDONLY | O_DIRECTORY`): what `CLONE_INTO_CGROUP` takes.
    public let directory: FileDescriptor
    /// v2 `cgroup.freeze`, v1 `freezer.state`: written to freeze and thaw.
    private let control: FileDescriptor
    /// v2 `cgroup.events` ("populated N", "frozen N"), v1 `freezer.state` (read side). Under
    /// v2, register it with `EPOLLPRI` to learn that the cgroup's state changed (frozen,
    /// thawed, emptied); a read by ``isFrozen()`` or ``isPopulated()`` clears the notification.
    public let stateFile: FileDescriptor

    /// Opens the cgroup at `path`.
    public init(path: String, version: CgroupVersion) throws {
        let directory = try openFile(path, flags: O_RDONLY | O_DIRECTORY)
        let controlName = version == .v2 ? "cgroup.freeze" : "freezer.state"
        if version == .v2 && access(path + "/" + controlName, F_OK) != 0 && errno == ENOENT {
            throw Errno(ENOTSUP, call: "\(path): no cgroup.freeze (Linux 5.2 or later freezes, and not the root cgroup)")
        }
        let control = try openFile(path + "/" + controlName, flags: O_WRONLY)
        let state = try openFile(path + (version == .v2 ? "/cgroup.events" : "/freezer.state"), flags: O_RDONLY)
        self.directory = directory
        self.control = control
        self.stateFile = state
        self.path = path
        self.version = version
    }

    /// Asks the kernel to freeze every task in the cgroup. Usually done by the time this
    /// returns (a task asleep is frozen at once); a running one freezes as it next leaves
    /// the kernel: ``isFrozen()`` says when all are.
    public func freeze() throws {
        try writeControl(version == .v2 ? "1" : "FROZEN", to: control, "freeze \(path)")
    }

    /// Thaws every task: each runs again at once, from where it was.
    public func thaw() throws {
        try writeControl(version == .v2 ? "0" : "THAWED", to: control, "thaw \(path)")
    }

    /// Whether every task of the cgroup is frozen now (v2: `cgroup.events` says "frozen 1";
    /// v1: `freezer.state` says FROZEN, not FREEZING). Also clears the pending v2 notification.
    public func isFrozen() throws -> Bool {
        // On the suspension path: read into the stack and look at the bytes, no allocation.
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { buffer in
            let n = try stateFile.read(into: UnsafeMutableRawBufferPointer(buffer), atOffset: 0)
            let text = UnsafeBufferPointer(rebasing: buffer[0..<n])
            switch version {
            case .v2: return eventsFlag("frozen", in: text)
            case .v1: return text.starts(with: "FROZEN".utf8)
            }
        }
    }

    /// Whether any process is in the cgroup (v2: `cgroup.events` "populated"; v1: its
    /// `cgroup.procs` lists one).
    public func isPopulated() throws -> Bool {
        switch version {
        case .v2: return eventsField("populated", of: try readState(stateFile, "read cgroup.events")) == "1"
        case .v1: return try !processes().isEmpty
        }
    }

    /// Whether ``stateFile`` notifies changes with `EPOLLPRI` (v2; v1 does not notify).
    public var notifiesChanges: Bool { version == .v2 }

    /// The processes in the cgroup now (`cgroup.procs`; threads are not listed apart).
    public func processes() throws -> [pid_t] {
        let file = try openFile(path + "/cgroup.procs", flags: O_RDONLY)
        let text = String(decoding: try file.readToEnd(limit: 16 << 20), as: UTF8.self)
        return text.split(separator: "\n").compactMap { pid_t($0) }
    }

    /// How a program starts in this cgroup (``SpawnRequest/cgroup``): created in it under v2,
    /// joining as its first step under v1. The cgroup must not be frozen: the new process
    /// would freeze before executing its program, and the spawner, which waits for that, with
    /// it. `EBUSY` if it is.
    public func spawnTarget() throws -> SpawnCgroup {
        let text = try readState(stateFile, "read state")
        let frozenOrFreezing = version == .v2 ? eventsField("frozen", of: text) == "1" : !text.hasPrefix("THAWED")
        // v2 reports "frozen 1" only once frozen: a freeze asked for and not done yet reads
        // "frozen 0", so the request itself is read too.
        let freezeRequested = version == .v2 ? try readSmallFile(path + "/cgroup.freeze").hasPrefix("1") : false
        guard !frozenOrFreezing && !freezeRequested else {
            throw Errno(EBUSY, call: "starting a process in \(path): the cgroup is frozen (thaw it first)")
        }
        return SpawnCgroup(directory: directory.rawValue, join: version == .v2 ? .cloneIntoCgroup : .procsWrite)
    }

    /// Kills every process in the cgroup with SIGKILL. v2 from Linux 5.14 writes `cgroup.kill`:
    /// the kernel kills the whole tree at once, a process forking meanwhile included. Otherwise
    /// (v1, older v2) the cgroup is frozen so that none can fork, each process listed gets
    /// SIGKILL through a pidfd, after checking it is still in this cgroup (a listed pid may
    /// have been reused), and the cgroup is thawed so that they die (a frozen v1 task dies only
    /// once thawed). A process forked by one not yet frozen can escape that round: until
    /// ``isPopulated()`` says false, call it again.
    public func killAll() throws {
        if version == .v2 {
            do {
                let kill = try openFile(path + "/cgroup.kill", flags: O_WRONLY)
                return try writeControl("1", to: kill, "write \(path)/cgroup.kill")
            } catch Errno.noSuchFileOrDirectory {
                // Before Linux 5.14: one by one.
            }
        }
        try killOneByOne()
    }

    /// ``killAll()`` without `cgroup.kill`.
    func killOneByOne() throws {
        try freeze()
        var firstError: Error?
        let membership = try ownMembershipLine()
        for pid in try processes() {
            do {
                let process = try PidFd(pid: pid)
                // The pidfd names one process for good: if /proc/PID is still in this cgroup
                // after it was opened, the signal reaches that process or a dead one.
                guard let lines = ProcFS.read("/proc/\(pid)/cgroup"), lines.split(separator: "\n").contains(where: { $0.hasSuffix(membership) }) else { continue }
                try process.send(SIGKILL)
            } catch Errno.noSuchProcess {
                continue
            } catch {
                firstError = firstError ?? error
            }
        }
        try thaw()
        if let firstError { throw firstError }
    }

    /// Removes the cgroup (`rmdir`). `EBUSY` while a process is in it (``isPopulated()``):
    /// under v2 ``stateFile`` signals when it empties.
    public func remove() throws {
        if rmdir(path) != 0 { throw Errno.current("rmdir(\(path))") }
    }

    /// The end of this cgroup's line in /proc/PID/cgroup: ":freezer:PATH" or "::PATH" (v2),
    /// with PATH in the hierarchy as the kernel names it.
    private func ownMembershipLine() throws -> String {
        guard let tables = CgroupTables.current() else { throw Errno(EIO, call: "reading /proc/self/mountinfo") }
        let mount = tables.mounts.filter { $0.version == version && (version == .v2 || $0.isV1Freezer) && relativePath(path, under: $0.mountPoint) != nil }
            .max { $0.mountPoint.count < $1.mountPoint.count }
        guard let cgroupPath = mount?.cgroupPath(of: path) else { throw Errno(ENOENT, call: "\(path) is not in a mounted cgroup hierarchy") }
        return version == .v2 ? ":" + cgroupPath : "freezer:" + cgroupPath
    }
}

/// A value of a `KEY VALUE` line of `cgroup.events`.
func eventsField(_ key: String, of text: String) -> Substring? {
    for line in text.split(separator: "\n") {
        let parts = line.split(separator: " ", maxSplits: 1)
        if parts.count == 2 && parts[0] == key { return parts[1] }
    }
    return nil
}

/// Whether the `KEY 1` line of `cgroup.events` is there.
func eventsFlag(_ key: StaticString, in text: UnsafeBufferPointer<UInt8>) -> Bool {
    let keyBytes = UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
    var lineStart = 0
    while lineStart < text.count {
        let lineEnd = text[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? text.count
        let line = text[lineStart..<lineEnd]
        if line.count == keyBytes.count + 2 && line.starts(with: keyBytes)
            && line[lineStart + keyBytes.count] == UInt8(ascii: " ") && line[lineStart + keyBytes.count + 1] == UInt8(ascii: "1") {
            return true
        }
        lineStart = lineEnd + 1
    }
    return false
}

/// Writes a control value at offset 0 (`pwrite`): kernfs takes each write whole.
private func writeControl(_ value: StaticString, to file: borrowing FileDescriptor, _ what: @autoclosure () -> String) throws {
    // kernfs writes do not sleep interruptibly; an EINTR is retried all the same.
    let descriptor = file.rawValue
    _ = try valueOrErrno(what()) { pwrite(descriptor, value.utf8Start, value.utf8CodeUnitCount, 0) }
}

/// Reads a small state file from offset 0 (`pread`), as kernfs regenerates it on each read.
private func readState(_ file: borrowing FileDescriptor, _ what: String) throws -> String {
    var buffer = [UInt8](repeating: 0, count: 256)
    let descriptor = file.rawValue
    let n = try buffer.withUnsafeMutableBytes { raw in try valueOrErrno(what) { pread(descriptor, raw.baseAddress, raw.count, 0) } }
    return String(decoding: buffer[0..<n], as: UTF8.self)
}

/// Reads a small file by path.
private func readSmallFile(_ path: String) throws -> String {
    let file = try openFile(path, flags: O_RDONLY)
    return try readState(file, "read \(path)")
}

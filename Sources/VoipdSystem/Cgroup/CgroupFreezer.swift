import CVoipd
import Glibc

/// Where voipd makes its apps' cgroups and which freezer it has there: a directory in the
/// cgroup v2 hierarchy (each app's cgroup frozen through `cgroup.freeze`) or in cgroup v1's
/// freezer hierarchy (`freezer.state`). Found by ``detect(configuredDirectory:)``.
///
/// Each app gets a cgroup of its own, `app-NAME`, made by voipd and owned by voipd's user
/// (mode 0755): the app can read its state but cannot write it, so it can neither thaw
/// itself nor leave (a process needs write access to a cgroup's `cgroup.procs` to move in or
/// out). An app that runs as root keeps that access: only apps of other users are contained.
public struct CgroupFreezer: Sendable, Equatable, CustomStringConvertible {
    /// Why voipd may make cgroups in ``directory``.
    public enum Origin: String, Sendable, Equatable {
        /// The configuration names it (`cgroupDirectory`).
        case configured
        /// voipd's own cgroup, delegated to it by its service manager (systemd's `Delegate=yes`).
        case delegated
        /// `voipd` under voipd's own cgroup in the v1 freezer hierarchy, on a machine with no
        /// cgroup v2 freezer (v1 has no delegation: root may write there).
        case legacyHierarchy
    }

    public let version: CgroupVersion
    /// The directory under which the apps' cgroups are made.
    public let directory: String
    public let origin: Origin

    public init(version: CgroupVersion, directory: String, origin: Origin) {
        self.version = version
        self.directory = directory
        self.origin = origin
    }

    /// The backend's name, for logs and status: "cgroup v2 freezer" or "cgroup v1 freezer".
    public var name: String { "cgroup \(version.rawValue) freezer" }

    public var description: String { "\(name) in \(directory) (\(origin.rawValue))" }

    /// The name of an app's cgroup in ``directory``. The prefix keeps every app name clear of
    /// the kernel's own files (`cgroup.procs`, `freezer.state`).
    public static func cgroupName(forApp app: String) -> String { "app-" + app }

    /// Makes the app's cgroup (mode 0755, voipd's) and opens it. One left by an earlier voipd
    /// is taken over if it is empty (and thawed first: a process started in a frozen cgroup
    /// would freeze before it could execute its program); a populated one is `EBUSY`, for
    /// ``openAppCgroup(for:)`` and the crash-recovery records to decide about.
    public func makeAppCgroup(for app: String) throws -> AppCgroup {
        let path = try appCgroupPath(app)
        if mkdir(path, 0o755) != 0 {
            guard errno == EEXIST else { throw Errno.current("mkdir(\(path))") }
            let existing = try AppCgroup(path: path, version: version)
            guard try !existing.isPopulated() else { throw Errno(EBUSY, call: "mkdir(\(path)): it exists and has processes") }
            try existing.thaw()
            return existing
        }
        do {
            return try AppCgroup(path: path, version: version)
        } catch {
            // Not left half made.
            rmdir(path)
            throw error
        }
    }

    /// Opens the app's cgroup as it is (a restarted voipd finding what an earlier one left).
    public func openAppCgroup(for app: String) throws -> AppCgroup {
        try AppCgroup(path: try appCgroupPath(app), version: version)
    }

    /// The apps that have a cgroup in ``directory`` now, by name.
    public func appsWithCgroups() throws -> [String] {
        guard let listing = opendir(directory) else { throw Errno.current("opendir(\(directory))") }
        defer { closedir(listing) }
        var apps: [String] = []
        let prefix = Self.cgroupName(forApp: "")
        while let entry = readdir(listing) {
            guard entry.pointee.d_type == UInt8(DT_DIR) else { continue }
            let name = DirectoryEntry.name(entry)
            if name.hasPrefix(prefix) && name.count > prefix.count { apps.append(String(name.dropFirst(prefix.count))) }
        }
        return apps.sorted()
    }

    private func appCgroupPath(_ app: String) throws -> String {
        // Names reach here validated by the daemon; a path component is all that is checked.
        guard !app.isEmpty, app.utf8.count <= 200, !app.contains("/"), !app.contains("\n"), !app.contains("\0") else {
            throw Errno(EINVAL, call: "app cgroup name \"\(app)\"")
        }
        return joinPath(directory, Self.cgroupName(forApp: app))
    }
}

/// What ``CgroupFreezer/detect(configuredDirectory:)`` found: a freezer voipd can use, or
/// why there is none (voipd then suspends with SIGSTOP).
public enum FreezerDetection: Sendable, Equatable {
    case available(CgroupFreezer)
    case unavailable(reason: String)
}

extension CgroupFreezer {
    /// Finds where voipd may make cgroups and which freezer it has there, in this order:
    /// 1. `configuredDirectory` (made if missing, its parent must exist), in the v2 hierarchy
    ///    or the v1 freezer hierarchy, whichever it is in;
    /// 2. voipd's own v2 cgroup (the `0::` line of /proc/self/cgroup, on the v2 mount found in
    ///    /proc/self/mountinfo) if it is delegated to voipd: systemd marks a cgroup of a unit
    ///    with `Delegate=yes` with the extended attribute `user.delegate` (and
    ///    `trusted.delegate`) "1"; a user's cgroup handed to an unprivileged voipd is its own;
    /// 3. where the machine has no usable cgroup v2 freezer at all, `voipd` under voipd's
    ///    cgroup in the v1 freezer hierarchy (made if missing; root may write there).
    /// Nothing else: under systemd, a cgroup not delegated belongs to systemd alone.
    public static func detect(configuredDirectory: String? = nil) -> FreezerDetection {
        guard let current = CgroupTables.current() else {
            return .unavailable(reason: "cannot read /proc/self/mountinfo and /proc/self/cgroup")
        }
        return detect(configuredDirectory: configuredDirectory, mounts: current.mounts, membership: current.membership)
    }

    /// ``detect(configuredDirectory:)`` for the given tables.
    public static func detect(configuredDirectory: String?, mounts: [CgroupMount], membership: CgroupMembership) -> FreezerDetection {
        if let configuredDirectory { return configured(configuredDirectory, mounts: mounts) }
        var reasons: [String] = []
        let unifiedMount = membership.unified.flatMap { path in mounts.first { $0.version == .v2 && $0.directory(of: path) != nil } }
        var machineHasV2Freezer = false
        if let unifiedMount, let path = membership.unified, let own = unifiedMount.directory(of: path) {
            switch delegated(own, cgroupPath: path, mount: unifiedMount) {
            case .success(let freezer): return .available(freezer)
            case .failure(let problem):
                reasons.append("cgroup v2: \(problem.reason)")
                machineHasV2Freezer = problem.kernelFreezes
            }
        } else {
            reasons.append(mounts.contains { $0.version == .v2 } ? "cgroup v2: voipd's cgroup is not in the mounted v2 hierarchy"
                                                                 : "cgroup v2: no cgroup2 file system is mounted")
        }
        if machineHasV2Freezer {
            reasons.append("cgroup v1: not used where cgroup v2 can freeze")
        } else {
            switch legacy(mounts: mounts, membership: membership) {
            case .success(let freezer): return .available(freezer)
            case .failure(let problem): reasons.append("cgroup v1: \(problem.reason)")
            }
        }
        return .unavailable(reason: reasons.joined(separator: "; "))
    }

    private struct Problem: Error {
        var reason: String
        /// Whether the kernel's v2 hierarchy can freeze, though voipd may not use it.
        var kernelFreezes = false
    }

    private static func configured(_ path: String, mounts: [CgroupMount]) -> FreezerDetection {
        guard path.hasPrefix("/") else { return .unavailable(reason: "cgroupDirectory \(path) is not an absolute path") }
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            return .unavailable(reason: "cgroupDirectory \(path): \(Errno.current("mkdir"))")
        }
        guard let resolved = resolvedPath(path) else { return .unavailable(reason: "cgroupDirectory \(path): \(Errno.current("realpath"))") }
        // The innermost mount holding it: /sys/fs/cgroup/unified, not the tmpfs at /sys/fs/cgroup.
        let mount = mounts.filter { relativePath(resolved, under: $0.mountPoint) != nil }.max { $0.mountPoint.count < $1.mountPoint.count }
        guard let mount, mount.version == .v2 || mount.isV1Freezer else {
            return .unavailable(reason: "cgroupDirectory \(path) is neither in the cgroup v2 hierarchy nor in cgroup v1's freezer hierarchy")
        }
        guard access(resolved, W_OK) == 0 else { return .unavailable(reason: "cgroupDirectory \(path): \(Errno.current("no write access"))") }
        if mount.version == .v2, mount.cgroupPath(of: resolved) != "/", access(joinPath(resolved, "cgroup.freeze"), F_OK) != 0 {
            return .unavailable(reason: "cgroupDirectory \(path): this kernel's cgroup v2 has no cgroup.freeze (Linux 5.2 or later freezes)")
        }
        return .available(CgroupFreezer(version: mount.version, directory: resolved, origin: .configured))
    }

    private static func delegated(_ directory: String, cgroupPath: String, mount: CgroupMount) -> Result<CgroupFreezer, Problem> {
        // The root cgroup cannot be frozen and so has no cgroup.freeze; any other can, from 5.2.
        let freezes = cgroupPath == "/" || access(joinPath(directory, "cgroup.freeze"), F_OK) == 0
        guard freezes else { return .failure(Problem(reason: "this kernel's cgroup v2 has no cgroup.freeze (Linux 5.2 or later freezes)")) }
        let markedDelegated = ["user.delegate", "trusted.delegate"].contains { extendedAttribute($0, of: directory) == "1" }
        var info = stat()
        let ownedAsUser = geteuid() != 0 && stat(directory, &info) == 0 && info.st_uid == geteuid()
        guard markedDelegated || ownedAsUser else {
            return .failure(Problem(reason: "voipd's cgroup \(cgroupPath) (\(directory)) is not delegated to it: run voipd under systemd with Delegate=yes, or name a directory with cgroupDirectory",
                                    kernelFreezes: true))
        }
        guard access(directory, W_OK) == 0 else {
            return .failure(Problem(reason: "voipd's cgroup \(directory) is delegated but not writable: \(Errno.current("access"))", kernelFreezes: true))
        }
        return .success(CgroupFreezer(version: .v2, directory: directory, origin: .delegated))
    }

    private static func legacy(mounts: [CgroupMount], membership: CgroupMembership) -> Result<CgroupFreezer, Problem> {
        guard let path = membership.legacy["freezer"] else { return .failure(Problem(reason: "no freezer hierarchy")) }
        guard let mount = mounts.first(where: { $0.isV1Freezer && $0.directory(of: path) != nil }), let own = mount.directory(of: path) else {
            return .failure(Problem(reason: "the freezer hierarchy is not mounted here"))
        }
        let directory = joinPath(own, "voipd")
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            return .failure(Problem(reason: "\(Errno.current("mkdir(\(directory))"))"))
        }
        return .success(CgroupFreezer(version: .v1, directory: directory, origin: .legacyHierarchy))
    }
}

/// The value of an extended attribute of a file, as text; nil when it has none or it cannot
/// be read (`trusted.*` needs CAP_SYS_ADMIN).
func extendedAttribute(_ name: String, of path: String) -> String? {
    var buffer = [UInt8](repeating: 0, count: 64)
    let n = getxattr(path, name, &buffer, buffer.count)
    guard n >= 0 else { return nil }
    return String(decoding: buffer[0..<n], as: UTF8.self)
}

/// `realpath(3)`: the path with symbolic links, `.` and `..` resolved; nil on failure (errno set).
func resolvedPath(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    guard realpath(path, &buffer) != nil else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

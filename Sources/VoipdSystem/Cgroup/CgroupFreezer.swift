import CVoipd
import Glibc

/// Where voipd makes its apps' cgroups and which freezer it has there: a directory in the
/// cgroup v2 hierarchy (each app's cgroup frozen through `cgroup.freeze`) or in cgroup v1's
/// freezer hierarchy (`freezer.state`). Found by ``detect(configuredDirectory:instance:)``.
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
        /// `voipd/INSTANCE` under voipd's own cgroup in the v1 freezer hierarchy, where voipd
        /// has no cgroup v2 freezer it may use (v1 has no delegation: root may write there).
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

/// What ``CgroupFreezer/detect(configuredDirectory:instance:)`` found: a freezer voipd can use, or
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
    /// 3. otherwise (no v2, or a v2 cgroup voipd may not write: a hybrid machine with voipd
    ///    outside systemd), `voipd/INSTANCE` under voipd's cgroup in the v1 freezer hierarchy,
    ///    when it is mounted and voipd can make and freeze cgroups there (root may write there).
    ///    `instance` (``instanceName(forSocket:)``) keeps the apps of two voipds on one
    ///    machine apart, as each one's delegated cgroup does under systemd.
    /// Nothing else: under systemd, a v2 cgroup not delegated belongs to systemd alone.
    public static func detect(configuredDirectory: String? = nil, instance: String) -> FreezerDetection {
        guard let current = CgroupTables.current() else {
            return .unavailable(reason: "cannot read /proc/self/mountinfo and /proc/self/cgroup")
        }
        return detect(configuredDirectory: configuredDirectory, instance: instance, mounts: current.mounts, membership: current.membership)
    }

    /// ``detect(configuredDirectory:instance:)`` for the given tables.
    public static func detect(configuredDirectory: String?, instance: String, mounts: [CgroupMount],
                              membership: CgroupMembership) -> FreezerDetection {
        if let configuredDirectory { return configured(configuredDirectory, mounts: mounts) }
        var reasons: [String] = []
        let unifiedMount = membership.unified.flatMap { path in mounts.first { $0.version == .v2 && $0.directory(of: path) != nil } }
        if let unifiedMount, let path = membership.unified, let own = unifiedMount.directory(of: path) {
            switch delegated(own, cgroupPath: path, mount: unifiedMount) {
            case .success(let freezer): return .available(freezer)
            case .failure(let problem): reasons.append("cgroup v2: \(problem.reason)")
            }
        } else {
            reasons.append(mounts.contains { $0.version == .v2 } ? "cgroup v2: voipd's cgroup is not in the mounted v2 hierarchy"
                                                                 : "cgroup v2: no cgroup2 file system is mounted")
        }
        switch legacy(instance: instance, mounts: mounts, membership: membership) {
        case .success(let freezer): return .available(freezer)
        case .failure(let problem): reasons.append("cgroup v1: \(problem.reason)")
        }
        return .unavailable(reason: reasons.joined(separator: "; "))
    }

    /// The name of an instance's directory under `voipd` in the v1 freezer hierarchy: its
    /// control socket's path escaped as systemd escapes paths in unit names
    /// (`/run/voipd.sock` → `run-voipd.sock`), so that it is one path component and tells
    /// whose it is. When that is longer than a file name may be (``longestInstanceName``;
    /// every byte but the plain ones takes four), the name is as much of its start as fits,
    /// then `~` and a digest of all of it: still one name per socket and the same in every
    /// run. A name that fits is what it always was; a longer one used to be the escaped path
    /// in full (cgroupfs, unlike other file systems, takes it), which
    /// ``formerInstanceName(forSocket:)`` gives so that what such a voipd left is found.
    public static func instanceName(forSocket socketPath: String) -> String {
        let name = escaped(socketPath)
        return name.utf8.count <= longestInstanceName ? name : boundedInstanceName(name)
    }

    /// The name a voipd of before names were cut gave the socket's directory, when it is not
    /// ``instanceName(forSocket:)``: the escaped path in full, past `NAME_MAX`. A voipd finds
    /// the directory of that name as it finds one its instance left when it suspended
    /// otherwise: what is frozen there and no one claims is thawed, and it goes once empty.
    public static func formerInstanceName(forSocket socketPath: String) -> String? {
        let name = escaped(socketPath)
        return name.utf8.count <= longestInstanceName ? nil : name
    }

    /// The socket's path escaped as systemd escapes paths, in full.
    private static func escaped(_ socketPath: String) -> String {
        let trimmed = socketPath.split(separator: "/", omittingEmptySubsequences: true)
        guard !trimmed.isEmpty else { return "-" }
        var name = ""
        for (index, component) in trimmed.enumerated() {
            if index > 0 { name += "-" }
            for (offset, byte) in component.utf8.enumerated() {
                let plain = (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || (byte == UInt8(ascii: ".") && !(index == 0 && offset == 0))
                name += plain ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16).leftPadded(to: 2)
            }
        }
        return name
    }

    /// The longest name ``instanceName(forSocket:)`` gives: `NAME_MAX`, the longest a path
    /// component may be (`mkdir` says `ENAMETOOLONG` past it).
    public static let longestInstanceName = 255

    /// An escaped path too long for a name: as much of its start as fits, never an escape cut
    /// in two, then `~` and the 64-bit FNV-1a of the whole escaped path in 16 hex digits.
    /// Escaping writes a `~` as `\x7e`: no name of a path that fits has one.
    private static func boundedInstanceName(_ escaped: String) -> String {
        var digest: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in escaped.utf8 {
            digest ^= UInt64(byte)
            digest = digest &* 0x0000_0100_0000_01b3
        }
        let suffix = "~" + String(digest, radix: 16).leftPadded(to: 16)
        var start = Array(escaped.utf8.prefix(longestInstanceName - suffix.utf8.count))
        // An escape is `\xHH`: one whose backslash is among the last three bytes kept is cut.
        if let backslash = start.suffix(3).lastIndex(of: UInt8(ascii: "\\")) { start.removeSubrange(backslash...) }
        return String(decoding: start, as: UTF8.self) + suffix
    }

    private struct Problem: Error {
        var reason: String
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
            return .failure(Problem(reason: "voipd's cgroup \(cgroupPath) (\(directory)) is not delegated to it: run voipd under systemd with Delegate=yes, or name a directory with cgroupDirectory"))
        }
        guard access(directory, W_OK) == 0 else {
            return .failure(Problem(reason: "voipd's cgroup \(directory) is delegated but not writable: \(Errno.current("access"))"))
        }
        return .success(CgroupFreezer(version: .v2, directory: directory, origin: .delegated))
    }

    /// Where ``detect(configuredDirectory:instance:)`` makes `instance`'s directory in the v1
    /// freezer hierarchy (`voipd/INSTANCE` under voipd's own cgroup there), whether it exists
    /// or not; nil when there is no freezer hierarchy here. A voipd that suspends otherwise
    /// now (configured for signals, or given a v2 cgroup) finds there what an earlier one of
    /// its instance left when it died.
    public static func legacyDirectory(instance: String) -> String? {
        guard let current = CgroupTables.current() else { return nil }
        guard case .success(let own) = legacyLocation(instance: instance, mounts: current.mounts, membership: current.membership) else { return nil }
        return joinPath(joinPath(own, "voipd"), instance)
    }

    /// voipd's own cgroup in the v1 freezer hierarchy, once `instance` is checked to be a path component.
    private static func legacyLocation(instance: String, mounts: [CgroupMount], membership: CgroupMembership) -> Result<String, Problem> {
        guard let path = membership.legacy["freezer"] else { return .failure(Problem(reason: "no freezer hierarchy")) }
        guard let mount = mounts.first(where: { $0.isV1Freezer && $0.directory(of: path) != nil }), let own = mount.directory(of: path) else {
            return .failure(Problem(reason: "the freezer hierarchy is not mounted here"))
        }
        guard !instance.isEmpty, !instance.contains("/"), instance != ".", instance != ".." else {
            return .failure(Problem(reason: "instance name \"\(instance)\" is not a path component"))
        }
        return .success(own)
    }

    private static func legacy(instance: String, mounts: [CgroupMount], membership: CgroupMembership) -> Result<CgroupFreezer, Problem> {
        let own: String
        switch legacyLocation(instance: instance, mounts: mounts, membership: membership) {
        case .success(let found): own = found
        case .failure(let problem): return .failure(problem)
        }
        var directory = own
        for component in ["voipd", instance] {
            directory = joinPath(directory, component)
            if mkdir(directory, 0o755) != 0 && errno != EEXIST {
                return .failure(Problem(reason: "\(Errno.current("mkdir(\(directory))"))"))
            }
        }
        // Usable: a cgroup of the hierarchy (not a directory of something mounted over it) that
        // voipd may write; the app cgroups under it inherit the files checked here.
        guard access(joinPath(directory, "freezer.state"), F_OK) == 0 else {
            return .failure(Problem(reason: "\(directory) has no freezer.state"))
        }
        guard access(joinPath(directory, "cgroup.procs"), W_OK) == 0 else {
            return .failure(Problem(reason: "\(directory): \(Errno.current("no write access to cgroup.procs"))"))
        }
        return .success(CgroupFreezer(version: .v1, directory: directory, origin: .legacyHierarchy))
    }

    /// What a voipd stopping for good leaves of the directory ``detect(configuredDirectory:instance:)``
    /// made in the v1 hierarchy: nothing once its apps' cgroups are empty. An app cgroup
    /// with processes (an app left running for the next voipd) stays, and with it the
    /// directory, as does `voipd` while another instance uses it. Nothing is removed from a
    /// configured or delegated directory. (An app's cgroup is removed as its process ends;
    /// one whose last task was still leaving then is empty by now.)
    public func removeInstanceDirectory() {
        guard origin == .legacyHierarchy else { return }
        // rmdir refuses a cgroup that has tasks or children (EBUSY, ENOTEMPTY): only empty
        // ones go, and whatever stays is what should.
        for app in (try? appsWithCgroups()) ?? [] { rmdir(joinPath(directory, Self.cgroupName(forApp: app))) }
        if rmdir(directory) == 0 { rmdir(parentPath(directory)) }
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

/// The directory holding `path` (an absolute path of a directory under another).
func parentPath(_ path: String) -> String {
    guard let slash = path.lastIndex(of: "/"), slash != path.startIndex else { return "/" }
    return String(path[..<slash])
}

extension String {
    /// The string with `0`s in front, to `width` characters.
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

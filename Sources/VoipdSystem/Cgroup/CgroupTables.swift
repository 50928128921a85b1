/// The two cgroup interfaces: v2's single hierarchy, and v1's hierarchies, one per set of
/// controllers (the freezer is the one voipd can use of them).
public enum CgroupVersion: String, Sendable, Equatable, Codable {
    case v1, v2
}

/// A mounted cgroup hierarchy, from a line of /proc/self/mountinfo.
public struct CgroupMount: Sendable, Equatable {
    public var version: CgroupVersion
    /// Where it is mounted.
    public var mountPoint: String
    /// The hierarchy's directory shown there: "/" unless a subtree was bind-mounted (a
    /// container's view).
    public var root: String
    /// A v1 hierarchy's controllers (its super options: "freezer", "cpu"…); none for v2.
    public var controllers: [String]

    public init(version: CgroupVersion, mountPoint: String, root: String, controllers: [String] = []) {
        self.version = version
        self.mountPoint = mountPoint
        self.root = root
        self.controllers = controllers
    }

    /// Whether it is the v1 hierarchy of the freezer controller.
    public var isV1Freezer: Bool { version == .v1 && controllers.contains("freezer") }

    /// The directory of the cgroup `path` (as /proc/PID/cgroup names it), or nil when this
    /// mount does not show it.
    public func directory(of path: String) -> String? {
        guard let relative = relativePath(path, under: root) else { return nil }
        return relative.isEmpty ? mountPoint : joinPath(mountPoint, relative)
    }

    /// The cgroup path of `directory`, a directory under this mount; nil when it is not under it.
    public func cgroupPath(of directory: String) -> String? {
        guard let relative = relativePath(directory, under: mountPoint) else { return nil }
        return relative.isEmpty ? root : joinPath(root, relative)
    }
}

/// Which cgroups a process is in, from /proc/PID/cgroup: its v2 cgroup (the `0::` line) and
/// its cgroup in each v1 hierarchy, by controller.
public struct CgroupMembership: Sendable, Equatable {
    /// The path in the v2 hierarchy, if the kernel has one.
    public var unified: String?
    /// The path in each v1 hierarchy, under each of its controllers ("freezer" → "/").
    public var legacy: [String: String]

    public init(unified: String? = nil, legacy: [String: String] = [:]) {
        self.unified = unified
        self.legacy = legacy
    }
}

/// The kernel's tables of cgroups: mounts (/proc/self/mountinfo) and memberships
/// (/proc/PID/cgroup), read and parsed. Nothing is assumed about where hierarchies are
/// mounted: `/sys/fs/cgroup` may be v2, a tmpfs of v1 mounts, or a hybrid of both with v2
/// at `/sys/fs/cgroup/unified`.
public enum CgroupTables {
    /// The cgroup hierarchies mounted in this process's mount namespace, in mount order.
    public static func mounts(mountInfo: String) -> [CgroupMount] {
        // Over UTF-8 bytes, not Characters: the table is ASCII with octal escapes, and
        // splitting it into grapheme clusters was a sixth of voipd's start.
        var result: [CgroupMount] = []
        for line in mountInfo.utf8.split(separator: UInt8(ascii: "\n")) {
            // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPEROPTIONS
            let fields = line.split(separator: UInt8(ascii: " "))
            guard let separator = fields.firstIndex(where: { $0.elementsEqual("-".utf8) }), separator >= 6,
                  fields.count >= separator + 4 else { continue }
            let type = fields[separator + 1]
            let version: CgroupVersion
            if type.elementsEqual("cgroup2".utf8) {
                version = .v2
            } else if type.elementsEqual("cgroup".utf8) {
                version = .v1
            } else {
                continue
            }
            let root = unescapeMountField(Substring(fields[3]))
            let mountPoint = unescapeMountField(Substring(fields[4]))
            let controllers = version == .v2 ? [] : fields[separator + 3].split(separator: UInt8(ascii: ",")).map { String(Substring($0)) }
            result.append(CgroupMount(version: version, mountPoint: mountPoint, root: root, controllers: controllers))
        }
        return result
    }

    /// A process's cgroups, from the text of /proc/PID/cgroup (`ID:CONTROLLERS:PATH` lines).
    public static func membership(_ text: String) -> CgroupMembership {
        var membership = CgroupMembership()
        for line in text.split(separator: "\n") {
            // The path may itself hold colons: split at the first two only.
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, parts[2].hasPrefix("/") else { continue }
            let path = String(parts[2])
            if parts[0] == "0" && parts[1].isEmpty {
                membership.unified = path
            } else {
                for controller in parts[1].split(separator: ",") { membership.legacy[String(controller)] = path }
            }
        }
        return membership
    }

    /// This process's mounts and cgroups now; nil when /proc cannot be read.
    public static func current() -> (mounts: [CgroupMount], membership: CgroupMembership)? {
        guard let mountInfo = ProcFS.read("/proc/self/mountinfo"), let cgroups = ProcFS.read("/proc/self/cgroup") else { return nil }
        return (mounts(mountInfo: mountInfo), membership(cgroups))
    }
}

/// A mountinfo field with its octal escapes (`\040` for a space, `\011`, `\012`, `\134`) undone.
func unescapeMountField(_ field: Substring) -> String {
    guard field.contains("\\") else { return String(field) }
    var bytes: [UInt8] = []
    let source = Array(field.utf8)
    var index = 0
    while index < source.count {
        if source[index] == UInt8(ascii: "\\"), index + 3 < source.count,
           let value = UInt8(String(decoding: source[(index + 1)...(index + 3)], as: UTF8.self), radix: 8) {
            bytes.append(value)
            index += 4
        } else {
            bytes.append(source[index])
            index += 1
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// `path` relative to `base` (both absolute, compared by whole components): "" for `base`
/// itself, nil when `path` is not under it.
func relativePath(_ path: String, under base: String) -> String? {
    let pathComponents = path.split(separator: "/")
    let baseComponents = base.split(separator: "/")
    guard pathComponents.count >= baseComponents.count, Array(pathComponents.prefix(baseComponents.count)) == baseComponents else { return nil }
    return pathComponents.dropFirst(baseComponents.count).joined(separator: "/")
}

/// `base/relative` with one slash between them.
func joinPath(_ base: String, _ relative: String) -> String {
    let trimmed = relative.drop { $0 == "/" }
    if trimmed.isEmpty { return base }
    return base.hasSuffix("/") ? base + trimmed : base + "/" + trimmed
}

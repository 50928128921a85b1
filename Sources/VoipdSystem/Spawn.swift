import CVoipd
import CVoipdSpawn
import Glibc

/// The account a spawned program runs as: its user, its group and its supplementary groups.
public struct SpawnCredentials: Sendable, Equatable {
    public var uid: uid_t
    public var gid: gid_t
    public var supplementaryGroups: [gid_t]

    public init(uid: uid_t, gid: gid_t, supplementaryGroups: [gid_t]) {
        self.uid = uid
        self.gid = gid
        self.supplementaryGroups = supplementaryGroups
    }

    /// A user's credentials from the group database: `getgrouplist(user, gid)`, as
    /// `initgroups` would set them (the spawner's own groups never leak to the program).
    public init(user: String, uid: uid_t, gid: gid_t) throws {
        var count: CInt = 16
        var groups = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(user, gid, &groups, &count) < 0 {
            guard count > CInt(groups.count) else { throw Errno(EINVAL, call: "getgrouplist(\(user))") }
            groups = [gid_t](repeating: 0, count: Int(count))
        }
        self.init(uid: uid, gid: gid, supplementaryGroups: Array(groups.prefix(Int(count))))
    }
}

/// A resource limit (`getrlimit`/`prlimit`): a resource and its soft and hard values.
public struct ResourceLimit: Sendable, Equatable, Codable {
    public var resource: CInt
    public var soft: UInt64
    public var hard: UInt64

    public init(resource: CInt, soft: UInt64, hard: UInt64) {
        self.resource = resource
        self.soft = soft
        self.hard = hard
    }

    /// `RLIMIT_NOFILE`: one more than the highest descriptor number the process may open.
    public static let openFiles = CInt(RLIMIT_NOFILE.rawValue)

    /// The calling process's limit now (`getrlimit`).
    public static func current(_ resource: CInt) throws -> ResourceLimit {
        var limit = rlimit()
        _ = try valueOrErrno("getrlimit(\(resource))") { getrlimit(__rlimit_resource_t(UInt32(resource)), &limit) }
        return ResourceLimit(resource: resource, soft: UInt64(limit.rlim_cur), hard: UInt64(limit.rlim_max))
    }

    /// Sets it for the calling process (`setrlimit`).
    public func apply() throws {
        var limit = rlimit(rlim_cur: rlim_t(soft), rlim_max: rlim_t(hard))
        _ = try valueOrErrno("setrlimit(\(resource))") { setrlimit(__rlimit_resource_t(UInt32(resource)), &limit) }
    }

    /// Sets it for another process (`prlimit64`: the caller's uid, or CAP_SYS_RESOURCE).
    public func apply(to pid: pid_t) throws {
        _ = try valueOrErrno("prlimit(\(pid), \(resource))") { voipd_prlimit(pid, resource, soft, hard) }
    }

    /// `RLIMIT_FSIZE`: the largest file offset the process may write to.
    public static let fileSize = CInt(RLIMIT_FSIZE.rawValue)
}

/// The cgroup a spawned program starts in. It is in it before it runs anything of its own:
/// created there by `clone3(CLONE_INTO_CGROUP)`, or, where that is refused or for cgroup v1,
/// writing itself to the cgroup's `cgroup.procs` as the child's first step, with the
/// spawner's credentials (the program can neither choose nor leave its cgroup).
public struct SpawnCgroup: Sendable, Equatable {
    /// How the child gets into the cgroup.
    public enum Join: Sendable, Equatable {
        /// `clone3` with `CLONE_INTO_CGROUP` (cgroup v2), or ``procsWrite`` where the kernel
        /// or a seccomp filter refuses it (``cloneIntoCgroupRefusal`` says why).
        case cloneIntoCgroup
        /// The child writes itself to `cgroup.procs` (cgroup v1 has no CLONE_INTO_CGROUP).
        case procsWrite
    }

    /// The cgroup's directory (borrowed, opened `O_RDONLY | O_DIRECTORY`; still owned by the caller).
    public var directory: CInt
    public var join: Join

    public init(directory: CInt, join: Join) {
        self.directory = directory
        self.join = join
    }

    /// Nil while spawns into a cgroup use `clone3(CLONE_INTO_CGROUP)`; otherwise the errno
    /// with which the kernel refused it (after which the children join by `cgroup.procs`).
    public static var cloneIntoCgroupRefusal: Errno? {
        let error = voipd_spawn_clone3_refusal()
        return error == 0 ? nil : Errno(error, call: "clone3(CLONE_INTO_CGROUP)")
    }
}

/// What to run and how: the argument vector, environment and working directory, the
/// descriptors that become the child's standard input, output and error, and the account,
/// limits and restrictions it starts with.
public struct SpawnRequest {
    public var arguments: [String]
    public var environment: [String]
    public var workingDirectory: String?
    /// Descriptors (borrowed, still owned by the caller) to install as 0, 1 and 2; nil
    /// means /dev/null for input and the spawner's own for output and error.
    public var standardInput: CInt?
    public var standardOutput: CInt?
    public var standardError: CInt?
    /// Descriptors (borrowed) to install as 3, 4, … in this order, as a service manager
    /// passes its sockets (`$LISTEN_FDS`); none by default.
    public var extraDescriptors: [CInt]
    /// The account to run as (nil: the spawner's). Needs root (`CAP_SETUID`, `CAP_SETGID`).
    public var credentials: SpawnCredentials?
    /// Limits set before the credentials change (so a raised limit can be lowered back).
    public var resourceLimits: [ResourceLimit]
    /// The umask (nil: the spawner's).
    public var umask: mode_t?
    /// `PR_SET_NO_NEW_PRIVS`: set-uid programs and file capabilities grant nothing to it.
    public var noNewPrivileges: Bool
    /// The cgroup it starts in (nil: the spawner's).
    public var cgroup: SpawnCgroup?

    public init(arguments: [String], environment: [String], workingDirectory: String? = nil,
                standardInput: CInt? = nil, standardOutput: CInt? = nil, standardError: CInt? = nil,
                extraDescriptors: [CInt] = [], credentials: SpawnCredentials? = nil,
                resourceLimits: [ResourceLimit] = [], umask: mode_t? = nil, noNewPrivileges: Bool = false,
                cgroup: SpawnCgroup? = nil) {
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.extraDescriptors = extraDescriptors
        self.credentials = credentials
        self.resourceLimits = resourceLimits
        self.umask = umask
        self.noNewPrivileges = noNewPrivileges
        self.cgroup = cgroup
    }

    /// Where a program named without a slash is looked up: the `PATH` of the request's
    /// environment, else the spawner's, else the system's default.
    var searchPath: String {
        if let entry = environment.last(where: { $0.hasPrefix("PATH=") }) { return String(entry.dropFirst(5)) }
        if let path = getenv("PATH") { return String(cString: path) }
        return "/usr/local/bin:/usr/bin:/bin"
    }
}

/// Starts a program and returns its pidfd. Nothing of the request (argument vector,
/// environment, working directory) is used by any process running with the spawner's
/// credentials: the child is a clone that shares the spawner's memory until `execve`
/// (like vfork, so it costs no copy), changes its credentials with no exec in between, and
/// only then enters the working directory, looks the program up and executes it with the
/// environment. On the way it resets every signal disposition and the signal mask (the
/// daemon blocks signals for its signalfd), leads a session of its own (no controlling
/// terminal), gets 0, 1, 2 and the extra descriptors and no other, the requested limits and
/// umask, and no capability unless it runs as root (the ambient set is always cleared).
///
/// A failure in the child is reported here, as the step and its errno (`chdir(/root)`,
/// `execve(foo)`), with the child already reaped.
public func spawn(_ request: SpawnRequest) throws -> PidFd {
    guard let program = request.arguments.first, !program.isEmpty else { throw Errno(EINVAL, call: "spawn: empty command") }
    let argv = request.arguments.map { strdup($0) } + [nil]
    let envp = request.environment.map { strdup($0) } + [nil]
    let searchPath = strdup(request.searchPath)
    let directory = request.workingDirectory.map { strdup($0) } ?? nil
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
        free(searchPath)
        free(directory)
    }
    let groups = request.credentials?.supplementaryGroups ?? []
    let limits = request.resourceLimits.map { voipd_spawn_limit(resource: $0.resource, soft: $0.soft, hard: $0.hard) }
    var pid: pid_t = 0
    var failure = voipd_spawn_failure()
    let pidfd = argv.withUnsafeBufferPointer { argvPointer in
        envp.withUnsafeBufferPointer { envpPointer in
            request.extraDescriptors.withUnsafeBufferPointer { extra in
                groups.withUnsafeBufferPointer { groupPointer in
                    limits.withUnsafeBufferPointer { limitPointer in
                        argvPointer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { argvConst in
                            envpPointer.withMemoryRebound(to: UnsafePointer<CChar>?.self) { envpConst in
                                var attributes = voipd_spawn_attributes(
                                    argv: argvConst.baseAddress, envp: envpConst.baseAddress, search_path: searchPath,
                                    working_directory: directory,
                                    stdin_fd: request.standardInput ?? -1, stdout_fd: request.standardOutput ?? -1,
                                    stderr_fd: request.standardError ?? -1,
                                    extra_fds: extra.baseAddress, extra_count: CInt(extra.count),
                                    change_credentials: request.credentials == nil ? 0 : 1,
                                    uid: request.credentials?.uid ?? 0, gid: request.credentials?.gid ?? 0,
                                    groups: groupPointer.baseAddress, group_count: CInt(groupPointer.count),
                                    limits: limitPointer.baseAddress, limit_count: CInt(limitPointer.count),
                                    umask: request.umask.map { CInt($0) } ?? -1,
                                    no_new_privileges: request.noNewPrivileges ? 1 : 0, new_session: 1,
                                    cgroup_fd: request.cgroup?.directory ?? -1, cgroup_join: cgroupJoin(request.cgroup))
                                return voipd_spawn(&attributes, &pid, &failure)
                            }
                        }
                    }
                }
            }
        }
    }
    guard pidfd >= 0 else { throw Errno(failure.error, call: describe(failure.step, request)) }
    return PidFd(adopting: FileDescriptor(adopting: pidfd), pid: pid)
}

/// Starts a program as ``spawn(_:)`` does and returns its pid, for callers that track it
/// some other way (the pidfd is closed).
public func spawnProcess(_ request: SpawnRequest) throws -> pid_t {
    try spawn(request).pid
}

private func cgroupJoin(_ cgroup: SpawnCgroup?) -> voipd_spawn_cgroup_join {
    switch cgroup?.join {
    case nil: return voipd_spawn_cgroup_none
    case .cloneIntoCgroup?: return voipd_spawn_cgroup_clone_into
    case .procsWrite?: return voipd_spawn_cgroup_procs_write
    }
}

/// Names the failed step of a spawn by the system call it made.
private func describe(_ step: voipd_spawn_step, _ request: SpawnRequest) -> String {
    let credentials = request.credentials
    switch step {
    case voipd_spawn_step_clone: return "clone"
    case voipd_spawn_step_signals: return "rt_sigaction"
    case voipd_spawn_step_setsid: return "setsid"
    case voipd_spawn_step_descriptors: return "dup3"
    case voipd_spawn_step_limits: return "prlimit"
    case voipd_spawn_step_setgroups: return "setgroups(\(credentials?.supplementaryGroups ?? []))"
    case voipd_spawn_step_setgid: return "setresgid(\(credentials?.gid ?? 0))"
    case voipd_spawn_step_setuid: return "setresuid(\(credentials?.uid ?? 0))"
    case voipd_spawn_step_verify_credentials: return "privileges still held after the switch to uid \(credentials?.uid ?? 0)"
    case voipd_spawn_step_capabilities: return "capset"
    case voipd_spawn_step_no_new_privileges: return "prctl(PR_SET_NO_NEW_PRIVS)"
    case voipd_spawn_step_chdir: return "chdir(\(request.workingDirectory ?? ""))"
    case voipd_spawn_step_close_descriptors: return "close_range"
    case voipd_spawn_step_exec: return "execve(\(request.arguments.first ?? ""))"
    case voipd_spawn_step_clone_into_cgroup: return "clone3(CLONE_INTO_CGROUP)"
    case voipd_spawn_step_cgroup_procs: return "write(cgroup.procs) joining the cgroup"
    default: return "spawn"
    }
}

/// The calling process's environment as `KEY=VALUE` strings.
public func currentEnvironment() -> [String] {
    var result: [String] = []
    var pointer = environ
    while let entry = pointer.pointee {
        result.append(String(cString: entry))
        pointer += 1
    }
    return result
}

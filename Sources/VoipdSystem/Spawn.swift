import CVoipd
import Glibc

/// What to run and how: the argument vector, environment and working directory, and the
/// descriptors that become the child's standard input, output and error.
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

    public init(arguments: [String], environment: [String], workingDirectory: String? = nil,
                standardInput: CInt? = nil, standardOutput: CInt? = nil, standardError: CInt? = nil,
                extraDescriptors: [CInt] = []) {
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.extraDescriptors = extraDescriptors
    }
}

/// Starts a child with `posix_spawnp` in a session of its own (`POSIX_SPAWN_SETSID`), with
/// an empty signal mask and default dispositions (the daemon blocks signals for its
/// signalfd; a child must not inherit that), and returns its pid. Every other descriptor is
/// close-on-exec, so the child inherits only 0, 1 and 2, and the request's extra descriptors
/// as 3, 4, ….
public func spawnProcess(_ request: SpawnRequest) throws -> pid_t {
    guard let program = request.arguments.first, !program.isEmpty else { throw Errno(EINVAL, call: "spawn: empty command") }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }

    var emptyMask = sigset_t()
    voipd_sigset_empty(&emptyMask)
    posix_spawnattr_setsigmask(&attributes, &emptyMask)
    var defaults = sigset_t()
    voipd_sigset_empty(&defaults)
    for signal in 1..<CInt(32) where signal != SIGKILL && signal != SIGSTOP { voipd_sigset_add(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(voipd_POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    if let fd = request.standardInput {
        posix_spawn_file_actions_adddup2(&actions, fd, 0)
    } else {
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    }
    if let fd = request.standardOutput { posix_spawn_file_actions_adddup2(&actions, fd, 1) }
    if let fd = request.standardError { posix_spawn_file_actions_adddup2(&actions, fd, 2) }
    // Each extra descriptor goes first to a number above every source and target, then to
    // its place: no source is overwritten before it is copied, and dup2 clears close-on-exec.
    let extra = request.extraDescriptors
    if let highest = extra.max() {
        let staging = max(highest, CInt(2 + extra.count)) + 1
        for (index, fd) in extra.enumerated() { posix_spawn_file_actions_adddup2(&actions, fd, staging + CInt(index)) }
        for index in extra.indices {
            posix_spawn_file_actions_adddup2(&actions, staging + CInt(index), 3 + CInt(index))
            posix_spawn_file_actions_addclose(&actions, staging + CInt(index))
        }
    }
    if let directory = request.workingDirectory { voipd_posix_spawn_file_actions_addchdir(&actions, directory) }

    let argv = request.arguments.map { strdup($0) } + [nil]
    let envp = request.environment.map { strdup($0) } + [nil]
    defer {
        argv.forEach { free($0) }
        envp.forEach { free($0) }
    }
    var pid: pid_t = 0
    let rc = posix_spawnp(&pid, program, &actions, &attributes, argv, envp)
    if rc != 0 { throw Errno(rc, call: "posix_spawn(\(program))") }
    return pid
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

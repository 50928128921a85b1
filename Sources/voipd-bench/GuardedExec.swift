import CVoipd
import Glibc

/// `voipd-bench guarded-exec PARENT PROGRAM ARGS...`: asks the kernel for SIGTERM when the
/// bench dies, then becomes PROGRAM. voipd and the floor are started through it, so that a
/// bench that crashes or is killed never leaves them behind: voipd answers SIGTERM by
/// resuming every app it stopped.
enum GuardedExec {
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count >= 2, let parent = pid_t(arguments[0]) else {
            writeError("usage: voipd-bench guarded-exec PARENT-PID PROGRAM [ARGS...]\n")
            return 2
        }
        guard voipd_prctl_set_pdeathsig(SIGTERM) == 0 else {
            perror("voipd-bench: prctl(PR_SET_PDEATHSIG)")
            return 1
        }
        // The parent may have died before the request took effect: no signal would come.
        guard getppid() == parent else { return 1 }
        let argv = arguments.dropFirst().map { strdup($0) } + [nil]
        execv(arguments[1], argv)
        perror("voipd-bench: execv(\(arguments[1]))")
        return 127
    }

    /// The command line that runs `command` under this guard.
    static func wrap(_ command: [String]) -> [String] {
        [BenchPaths.executable, "guarded-exec", "\(getpid())"] + command
    }
}

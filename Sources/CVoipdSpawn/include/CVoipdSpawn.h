// CVoipdSpawn: the part of starting a process that runs between clone and execve. It is C
// because only raw system calls are safe there: the child shares voipd's memory (no copy,
// like vfork) and must not touch the Swift runtime, malloc, or glibc's thread bookkeeping.
// Everything it needs is prepared by the parent (VoipdSystem's `spawn`), as plain arrays.
#ifndef CVOIPD_SPAWN_H
#define CVOIPD_SPAWN_H

#include <stdint.h>
#include <sys/types.h>

/// One resource limit to set in the child (`prlimit64`): a resource number and its values.
typedef struct {
    int resource;
    uint64_t soft;
    uint64_t hard;
} voipd_spawn_limit;

/// How the child joins the cgroup of `cgroup_fd`.
typedef enum {
    /// No cgroup: the child stays in the spawner's.
    voipd_spawn_cgroup_none = 0,
    /// `clone3` with `CLONE_INTO_CGROUP` (cgroup v2, Linux >= 5.7): the child is created in
    /// the cgroup. Where the kernel or a seccomp filter refuses clone3 or the flag (ENOSYS,
    /// EINVAL, E2BIG, EPERM), the child joins as with `voipd_spawn_cgroup_procs_write`
    /// instead, and later spawns of the process go that way at once.
    voipd_spawn_cgroup_clone_into,
    /// The child writes "0" (itself) to the cgroup's `cgroup.procs` as its first step,
    /// before anything else and with the spawner's credentials (cgroup v1, which has no
    /// CLONE_INTO_CGROUP, and the fallback above).
    voipd_spawn_cgroup_procs_write,
} voipd_spawn_cgroup_join;

/// What the child does, in this order: it joins its cgroup, if any; signal dispositions to default; a new session;
/// descriptors into place (0, 1, 2, then 3… from `extra_fds`); resource limits; the
/// credentials (supplementary groups, group, user, each set in full: real, effective and
/// saved); every capability dropped when the result is not uid 0 (and the ambient ones
/// always); `PR_SET_NO_NEW_PRIVS`; the umask; the working directory (entered as the new
/// user); every other descriptor closed; an empty signal mask; then `execve`.
typedef struct {
    /// The program and its arguments, NULL-terminated; argv[0] is the program.
    const char *const *argv;
    /// The environment, NULL-terminated. Given only to execve.
    const char *const *envp;
    /// Directories to search (colon-separated) when argv[0] has no slash; NULL: run argv[0] as is.
    const char *search_path;
    /// Entered after the credentials change; NULL: stay.
    const char *working_directory;
    /// Descriptors to install as 0, 1 and 2; -1: /dev/null for 0, the spawner's own for 1 and 2.
    int stdin_fd;
    int stdout_fd;
    int stderr_fd;
    /// Descriptors to install as 3, 4, … in this order.
    const int *extra_fds;
    int extra_count;
    /// Whether to change credentials to uid, gid and groups.
    int change_credentials;
    uid_t uid;
    gid_t gid;
    const gid_t *groups;
    int group_count;
    const voipd_spawn_limit *limits;
    int limit_count;
    /// The umask to set, or -1 to keep the spawner's.
    int umask;
    int no_new_privileges;
    int new_session;
    /// The cgroup to start in: a directory descriptor (`O_RDONLY | O_DIRECTORY`), or -1.
    int cgroup_fd;
    voipd_spawn_cgroup_join cgroup_join;
} voipd_spawn_attributes;

/// Which step of the child failed.
typedef enum {
    voipd_spawn_step_none = 0,
    voipd_spawn_step_clone,
    voipd_spawn_step_signals,
    voipd_spawn_step_setsid,
    voipd_spawn_step_descriptors,
    voipd_spawn_step_limits,
    voipd_spawn_step_setgroups,
    voipd_spawn_step_setgid,
    voipd_spawn_step_setuid,
    voipd_spawn_step_verify_credentials,
    voipd_spawn_step_capabilities,
    voipd_spawn_step_no_new_privileges,
    voipd_spawn_step_chdir,
    voipd_spawn_step_close_descriptors,
    voipd_spawn_step_exec,
    /// clone3 with CLONE_INTO_CGROUP refused the cgroup (EACCES, EBUSY, EOPNOTSUPP, EBADF…).
    voipd_spawn_step_clone_into_cgroup,
    /// The child could not write itself to the cgroup's `cgroup.procs`.
    voipd_spawn_step_cgroup_procs,
} voipd_spawn_step;

typedef struct {
    voipd_spawn_step step;
    /// The errno of the failed step.
    int error;
} voipd_spawn_failure;

/// Starts the program (clone with CLONE_VM | CLONE_VFORK | CLONE_PIDFD, or clone3 with
/// CLONE_INTO_CGROUP as well: the parent waits until the child has executed the program or
/// failed). Returns a pidfd (close-on-exec) and stores the pid; or returns -1 and says which
/// step failed with which errno (a child that failed has been reaped by then).
int voipd_spawn(const voipd_spawn_attributes *attributes, pid_t *pid, voipd_spawn_failure *failure);

/// 0 while `voipd_spawn_cgroup_clone_into` creates children with clone3; otherwise the errno
/// with which the kernel (or a seccomp filter) refused it, after which children join their
/// cgroup by `cgroup.procs`; ENOSYS as well on an architecture this file has no clone3 for.
int voipd_spawn_clone3_refusal(void);

#endif

#define _GNU_SOURCE
#include "CVoipdSpawn.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

// The child runs on voipd's memory: no sanitizer instrumentation, no libc function that a
// sanitizer intercepts or that takes a lock, only syscall(2).
#define CHILD __attribute__((no_sanitize("address", "thread", "undefined"), noinline))

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VOIPD_THREAD_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define VOIPD_THREAD_SANITIZER 1
#endif

typedef int (*clone_function)(int (*)(void *), void *, int, void *, ...);

/// glibc's clone. ThreadSanitizer intercepts clone as if it were fork: its half in the child
/// (ForkChildAfter) runs on voipd's memory under CLONE_VM, corrupts the runtime's state of
/// the parent and fails one of its CHECKs. glibc's own clone, which the interceptor would
/// call, leaves the child as it is without a sanitizer.
static clone_function libc_clone(void) {
#ifdef VOIPD_THREAD_SANITIZER
    return (clone_function)dlsym(RTLD_NEXT, "clone");
#else
    return clone;
#endif
}

typedef struct {
    const voipd_spawn_attributes *attributes;
    voipd_spawn_failure *failure;
    /// Whether the child writes itself to the cgroup's cgroup.procs (it was not created in it).
    int join_by_procs;
} child_context;

CHILD static _Noreturn void child_fail(child_context *context, voipd_spawn_step step, int error) {
    context->failure->error = error;
    context->failure->step = step;
    syscall(SYS_exit_group, 127);
    __builtin_unreachable();
}

/// Fails the step with the errno of the system call just made.
#define CHECK(call, step) do { if ((call) < 0) child_fail(context, step, errno); } while (0)

// The kernel's struct sigaction (handler, flags, restorer, mask), all zero: SIG_DFL.
static const unsigned long default_action[4] = {0, 0, 0, 0};
// The kernel's sigset_t (64 signals), empty.
static const unsigned long empty_signal_set = 0;

CHILD static void reset_signals(child_context *context) {
    for (int signal = 1; signal <= 64; signal++) {
        if (signal == SIGKILL || signal == SIGSTOP) continue;
        // EINVAL: a signal number this architecture does not have.
        if (syscall(SYS_rt_sigaction, signal, default_action, NULL, sizeof(empty_signal_set)) < 0 && errno != EINVAL)
            child_fail(context, voipd_spawn_step_signals, errno);
    }
}

/// Installs stdin, stdout, stderr and the extra descriptors as 0, 1, 2, 3, …. Each source
/// goes first to a number above every target, so no source is overwritten before it is
/// copied; then to its place (dup3 without O_CLOEXEC: the program inherits it).
CHILD static void place_descriptors(child_context *context) {
    const voipd_spawn_attributes *a = context->attributes;
    int targets = 3 + a->extra_count;
    int staged[targets];
    for (int target = 0; target < targets; target++) {
        int source;
        if (target >= 3) {
            source = a->extra_fds[target - 3];
        } else {
            source = target == 0 ? a->stdin_fd : target == 1 ? a->stdout_fd : a->stderr_fd;
        }
        if (source < 0 && target == 0) {
            source = (int)syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC);
            CHECK(source, voipd_spawn_step_descriptors);
        } else if (source < 0) {
            // The spawner's own output and error, if it has them.
            source = target;
            if (syscall(SYS_fcntl, source, F_GETFD) < 0) { staged[target] = -1; continue; }
        }
        staged[target] = (int)syscall(SYS_fcntl, source, F_DUPFD_CLOEXEC, targets);
        CHECK(staged[target], voipd_spawn_step_descriptors);
    }
    for (int target = 0; target < targets; target++) {
        if (staged[target] >= 0) CHECK(syscall(SYS_dup3, staged[target], target, 0), voipd_spawn_step_descriptors);
    }
}

CHILD static void change_credentials(child_context *context) {
    const voipd_spawn_attributes *a = context->attributes;
    // Groups first, then the group, then the user: after setuid the others are out of reach.
    CHECK(syscall(SYS_setgroups, (size_t)a->group_count, a->groups), voipd_spawn_step_setgroups);
    CHECK(syscall(SYS_setresgid, a->gid, a->gid, a->gid), voipd_spawn_step_setgid);
    CHECK(syscall(SYS_setresuid, a->uid, a->uid, a->uid), voipd_spawn_step_setuid);
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    CHECK(syscall(SYS_getresuid, &ruid, &euid, &suid), voipd_spawn_step_verify_credentials);
    CHECK(syscall(SYS_getresgid, &rgid, &egid, &sgid), voipd_spawn_step_verify_credentials);
    if (ruid != a->uid || euid != a->uid || suid != a->uid || rgid != a->gid || egid != a->gid || sgid != a->gid)
        child_fail(context, voipd_spawn_step_verify_credentials, EPERM);
    // Regaining root must be impossible now.
    if (a->uid != 0 && syscall(SYS_setresuid, 0, 0, 0) == 0) child_fail(context, voipd_spawn_step_verify_credentials, EPERM);
}

/// No ambient capability survives; a program that does not run as root starts with none at
/// all (permitted, effective, inheritable), checked.
CHILD static void drop_capabilities(child_context *context) {
    if (syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        child_fail(context, voipd_spawn_step_capabilities, errno);
    if (syscall(SYS_geteuid) == 0) return;
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct none[2] = {{0, 0, 0}, {0, 0, 0}};
    CHECK(syscall(SYS_capset, &header, none), voipd_spawn_step_capabilities);
    struct __user_cap_data_struct held[2] = {{1, 1, 1}, {1, 1, 1}};
    CHECK(syscall(SYS_capget, &header, held), voipd_spawn_step_capabilities);
    for (int i = 0; i < 2; i++) {
        if (held[i].effective | held[i].permitted | held[i].inheritable) child_fail(context, voipd_spawn_step_capabilities, EPERM);
    }
}

/// execve, looking the program up in `search_path` as execvp does (as the new user: a
/// directory it may not search is skipped).
CHILD static _Noreturn void execute(child_context *context) {
    const voipd_spawn_attributes *a = context->attributes;
    const char *program = a->argv[0];
    int has_slash = 0;
    for (const char *c = program; *c; c++) has_slash |= *c == '/';
    if (!a->search_path || has_slash) {
        syscall(SYS_execve, program, a->argv, a->envp);
        child_fail(context, voipd_spawn_step_exec, errno);
    }
    size_t name_length = 0;
    while (program[name_length]) name_length++;
    char path[4096];
    int denied = 0;
    const char *directory = a->search_path;
    while (1) {
        const char *end = directory;
        while (*end && *end != ':') end++;
        size_t length = (size_t)(end - directory);
        if (length + 1 + name_length + 1 <= sizeof(path)) {
            size_t n = 0;
            // An empty entry is the working directory.
            if (length == 0) path[n++] = '.';
            for (size_t i = 0; i < length; i++) path[n++] = directory[i];
            path[n++] = '/';
            for (size_t i = 0; i <= name_length; i++) path[n++] = program[i];
            syscall(SYS_execve, path, a->argv, a->envp);
            switch (errno) {
            case EACCES: denied = 1; break;
            case ENOENT: case ENOTDIR: case ESTALE: case ENODEV: case ETIMEDOUT: case ELOOP: case ENAMETOOLONG: break;
            default: child_fail(context, voipd_spawn_step_exec, errno);
            }
        }
        if (!*end) break;
        directory = end + 1;
    }
    child_fail(context, voipd_spawn_step_exec, denied ? EACCES : ENOENT);
}

/// Moves the child into its cgroup by writing "0" (the writer) to `cgroup.procs`, with the
/// spawner's credentials still: an app must never be able to choose or leave its cgroup.
CHILD static void join_cgroup(child_context *context) {
    int procs = (int)syscall(SYS_openat, context->attributes->cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    CHECK(procs, voipd_spawn_step_cgroup_procs);
    CHECK(syscall(SYS_write, procs, "0", 1), voipd_spawn_step_cgroup_procs);
    syscall(SYS_close, procs);
}

CHILD static int spawn_child(void *argument) {
    child_context *context = argument;
    const voipd_spawn_attributes *a = context->attributes;
    // First of all: nothing of the child runs outside its cgroup that the cgroup could see.
    if (context->join_by_procs) join_cgroup(context);
    // Every signal is blocked (by the parent) until the dispositions are the defaults.
    reset_signals(context);
    if (a->new_session) CHECK(syscall(SYS_setsid), voipd_spawn_step_setsid);
    place_descriptors(context);
    for (int i = 0; i < a->limit_count; i++) {
        const uint64_t limit[2] = {a->limits[i].soft, a->limits[i].hard};
        CHECK(syscall(SYS_prlimit64, 0, a->limits[i].resource, limit, NULL), voipd_spawn_step_limits);
    }
    if (a->change_credentials) change_credentials(context);
    drop_capabilities(context);
    if (a->no_new_privileges) CHECK(syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), voipd_spawn_step_no_new_privileges);
    if (a->umask >= 0) syscall(SYS_umask, a->umask);
    if (a->working_directory) CHECK(syscall(SYS_chdir, a->working_directory), voipd_spawn_step_chdir);
    CHECK(syscall(SYS_close_range, 3 + a->extra_count, ~0U, 0), voipd_spawn_step_close_descriptors);
    CHECK(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &empty_signal_set, NULL, sizeof(empty_signal_set)), voipd_spawn_step_signals);
    execute(context);
}

// clone3 starts the child on its new stack in the middle of the calling function, so it cannot
// be called through syscall(2) with CLONE_VM: this stub makes the call and, in the child,
// calls fn(argument) on the new stack, as clone(3) does (and glibc's internal __clone3).
// Returns the child's pid, or -errno. The registers kept across the call hold fn and its
// argument: r8 and r9 on x86-64 (syscall clobbers only rax, rcx and r11), x10 and x11 on
// arm64 (svc clobbers only x0).
#if defined(__x86_64__)
#define HAVE_CLONE3_STUB 1
__asm__(".text\n"
        ".p2align 4\n"
        ".type voipd_clone3_stub, @function\n"
        "voipd_clone3_stub:\n"
        "    mov %rcx, %r8\n"
        "    mov %rdx, %r9\n"
        "    mov $435, %eax\n"
        "    syscall\n"
        "    test %rax, %rax\n"
        "    jz 1f\n"
        "    ret\n"
        "1:  xor %ebp, %ebp\n"
        "    and $-16, %rsp\n"
        "    mov %r8, %rdi\n"
        "    call *%r9\n"
        "    mov %eax, %edi\n"
        "    mov $231, %eax\n"      // exit_group
        "    syscall\n"
        "    hlt\n"
        ".size voipd_clone3_stub, .-voipd_clone3_stub\n");
#elif defined(__aarch64__)
#define HAVE_CLONE3_STUB 1
__asm__(".text\n"
        ".p2align 2\n"
        ".type voipd_clone3_stub, %function\n"
        "voipd_clone3_stub:\n"
        "    mov x10, x2\n"
        "    mov x11, x3\n"
        "    mov x8, #435\n"
        "    svc #0\n"
        "    cbz x0, 1f\n"
        "    ret\n"
        "1:  mov x29, xzr\n"
        "    mov x30, xzr\n"
        "    mov x0, x11\n"
        "    blr x10\n"
        "    mov x8, #94\n"         // exit_group
        "    svc #0\n"
        "    brk #0\n"
        ".size voipd_clone3_stub, .-voipd_clone3_stub\n");
#else
#define HAVE_CLONE3_STUB 0
#endif

/// The kernel's struct clone_args (Linux >= 5.7, with `cgroup`).
struct clone3_arguments {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

#if HAVE_CLONE3_STUB
long voipd_clone3_stub(struct clone3_arguments *arguments, size_t size, int (*fn)(void *), void *argument);
#endif

// The errno with which clone3 was refused (0: not yet). Written by the parent only.
static int clone3_refusal = HAVE_CLONE3_STUB ? 0 : ENOSYS;

int voipd_spawn_clone3_refusal(void) { return __atomic_load_n(&clone3_refusal, __ATOMIC_RELAXED); }

/// Whether clone3's error means the kernel (or a seccomp filter: Docker's answers ENOSYS)
/// does not offer clone3 or CLONE_INTO_CGROUP, rather than refusing this cgroup.
static int means_clone3_unavailable(int error) {
    return error == ENOSYS || error == EINVAL || error == E2BIG || error == EPERM;
}

int voipd_spawn(const voipd_spawn_attributes *attributes, pid_t *pid, voipd_spawn_failure *failure) {
    failure->step = voipd_spawn_step_none;
    failure->error = 0;
    clone_function clone_child = libc_clone();
    if (!clone_child) {
        failure->step = voipd_spawn_step_clone;
        failure->error = ENOSYS;
        return -1;
    }
    // The child's own stack: it shares the parent's memory until it executes the program.
    const size_t stack_size = 64 * 1024;
    void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        failure->step = voipd_spawn_step_clone;
        failure->error = errno;
        return -1;
    }
    // No signal handler of the parent may run in the child before it resets them.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    child_context context = {attributes, failure, attributes->cgroup_join == voipd_spawn_cgroup_procs_write};
    int pidfd = -1;
    pid_t child = -1;
    int clone_error = 0;
    voipd_spawn_step clone_step = voipd_spawn_step_clone;
#if HAVE_CLONE3_STUB
    if (attributes->cgroup_join == voipd_spawn_cgroup_clone_into && voipd_spawn_clone3_refusal() == 0) {
        struct clone3_arguments arguments = {
            .flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_INTO_CGROUP,
            .pidfd = (uint64_t)(uintptr_t)&pidfd,
            .exit_signal = SIGCHLD,
            .stack = (uint64_t)(uintptr_t)stack,
            .stack_size = stack_size,
            .cgroup = (uint64_t)attributes->cgroup_fd,
        };
        long result = voipd_clone3_stub(&arguments, sizeof arguments, spawn_child, &context);
        if (result >= 0) {
            child = (pid_t)result;
        } else if (means_clone3_unavailable((int)-result)) {
            __atomic_store_n(&clone3_refusal, (int)-result, __ATOMIC_RELAXED);
        } else {
            clone_error = (int)-result;
            clone_step = voipd_spawn_step_clone_into_cgroup;
        }
    }
#endif
    if (child < 0 && clone_error == 0) {
        // Without clone3 (refused, or none for this architecture) the child joins its cgroup
        // by cgroup.procs: the same end, one step later, still before anything else.
        if (attributes->cgroup_join == voipd_spawn_cgroup_clone_into) context.join_by_procs = 1;
        child = clone_child(spawn_child, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &context, &pidfd);
        if (child < 0) clone_error = errno;
    }
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    munmap(stack, stack_size);
    if (child < 0) {
        failure->step = clone_step;
        failure->error = clone_error;
        return -1;
    }
    if (failure->step != voipd_spawn_step_none) {
        // The child has exited already (CLONE_VFORK); reap it.
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
        close(pidfd);
        return -1;
    }
    *pid = child;
    return pidfd;
}

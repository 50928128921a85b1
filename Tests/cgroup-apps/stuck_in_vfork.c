/*
 * stuck_in_vfork.c -- an app whose stop never lands: it vforks a child that neither execs
 * nor exits, and waits for it in the kernel, in a sleep only a fatal signal ends ('D' in
 * /proc: TASK_KILLABLE), where SIGSTOP does not reach it (nor the cgroup v2 freezer). The
 * child stops with SIGSTOP like any process. A task in uninterruptible sleep (a hung NFS
 * server) keeps a process from stopping the same way, without a test's say.
 *
 * Usage: stuck_in_vfork
 * Standard output: "ready\n", written by the child once it runs (the parent is then
 * waiting for it). Ends on SIGTERM or SIGKILL to both (its process group): the child dies,
 * and the parent, released, dies of its own.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <unistd.h>

int main(void)
{
    static const char ready[] = "ready\n";
    pid_t child = vfork();
    if (child == 0) {
        /* The parent's memory and stack: nothing but system calls, and never a return. */
        write(1, ready, sizeof ready - 1);
        for (;;) pause();
    }
    return child < 0 ? 1 : 0;
}

/*
 * process_tree.c -- an app as the freezer tests need one: a process with THREADS extra
 * threads and a child process with as many, every task (the main threads too) running a
 * little every millisecond, so that a task that is not frozen shows up in its
 * /proc/PID/task/TID/schedstat at once, and counts its own ticks in a shared file, so
 * that a test sees whether the app's code ran (a frozen task woken by a signal is put on a
 * CPU for a moment, in the kernel, to take it, and freezes again before returning to the app).
 *
 * Usage: process_tree THREADS COUNTERS
 *   COUNTERS: an existing file of at least 8 * 2 * (THREADS + 1) bytes; task i adds 1 to the
 *   i-th native 64-bit integer on each tick (the process's main thread 0, its threads 1…THREADS,
 *   the child's main thread THREADS + 1, its threads after it).
 * Standard output, one line each:
 *   cgroup <ITS /proc/self/cgroup, lines joined by ';'>   (read first thing in main)
 *   ready <PID> <CHILD_PID>                                (every thread of both is running)
 * Ends when killed, or after 10 minutes (a test that lost track of it).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static unsigned long long *counters;

static void tick(long slot)
{
    for (int i = 0; i < 2000; i++) sink += (unsigned long)i;
    __atomic_fetch_add(&counters[slot], 1, __ATOMIC_RELAXED);
    struct timespec pause = { 0, 1000000 };
    nanosleep(&pause, NULL);
}

static void *worker(void *argument)
{
    long slot = (long)argument;
    for (;;) tick(slot);
    return NULL;
}

/// Threads for slots first + 1 … first + count.
static void start_threads(long first, int count)
{
    for (int i = 1; i <= count; i++) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, worker, (void *)(first + i)) != 0) { perror("pthread_create"); exit(1); }
    }
}

int main(int argc, char **argv)
{
    char text[1024] = "";
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (n > 0) {
        text[n] = 0;
        for (char *c = text; *c; c++) if (*c == '\n') *c = ';';
    }
    printf("cgroup %s\n", text);
    fflush(stdout);
    if (argc != 3) { fprintf(stderr, "usage: process_tree THREADS COUNTERS\n"); return 2; }
    int threads = atoi(argv[1]);
    int counters_fd = open(argv[2], O_RDWR | O_CLOEXEC);
    if (counters_fd < 0) { perror(argv[2]); return 1; }
    counters = mmap(NULL, sizeof *counters * 2 * (threads + 1), PROT_READ | PROT_WRITE, MAP_SHARED, counters_fd, 0);
    if (counters == MAP_FAILED) { perror("mmap"); return 1; }
    alarm(600);

    int started[2];
    if (pipe(started) < 0) { perror("pipe"); return 1; }
    pid_t child = fork();
    if (child < 0) { perror("fork"); return 1; }
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        start_threads(threads + 1, threads);
        if (write(started[1], "x", 1) != 1) _exit(1);
        for (;;) tick(threads + 1);
    }
    char byte;
    if (read(started[0], &byte, 1) != 1) return 1;
    start_threads(0, threads);
    printf("ready %d %d\n", (int)getpid(), (int)child);
    fflush(stdout);
    for (;;) tick(0);
}

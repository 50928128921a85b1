/*
 * wake_app.c -- the app side of `voipd-bench wake --app c`: the same app as the Swift
 * `voipd-bench app`, written in C against libvoipd (the client library voipd ships for C and
 * C++ apps), so that the wake is measured for an app of the size of wake_floor.c's child.
 *
 * Build (the bench does it, with the floor's compiler and flags, and libvoipd's sources
 * compiled in, as an app linking libvoipd.a has it; L = Sources/libvoipd):
 *   gcc -O2 -Wall -I L -I L/include -o wake_app wake_app.c L/connection.c ... (every L/x.c) -lm
 * Usage: wake_app --connect PATH --index N [--cpu C]   (launched by voipd, which sets
 *   VOIPD_SOCKET and VOIPD_APP_NAME)
 *
 * It says hello, connects its VoIP socket to the bench's listener at PATH, registers it as
 * "bench", announces its index (4 bytes, little-endian) on it, and then serves one poll loop
 * over that socket and libvoipd's descriptor. When a stamp arrives it reads it (as soon as
 * poll says the socket is readable, or from its handler if voipd's voipSocketReadable comes
 * first), notes the time, and reports "W INDEX T0 T2" on standard output (the bench's pipe;
 * one write of less than PIPE_BUF bytes, so reports never interleave); then libvoipd
 * acknowledges the events and voipd suspends it. It ends when the bench closes its end of
 * the socket, when voipd closes the connection, or on willTerminate.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "voipd.h"

struct app {
    int voip;                 /* the VoIP socket */
    long index;
    int peer_closed;          /* the bench closed its end: the benchmark is over */
    int terminating;          /* willTerminate acknowledged: end */
    unsigned char pending[8]; /* the start of a stamp not read whole yet */
    size_t pending_length;
};

static int fail(const char *what, int error)
{
    fprintf(stderr, "wake_app: %s: %s\n", what, error < 0 ? voipd_strerror(error) : strerror(error));
    return 1;
}

/* Reads what is waiting, without blocking, and reports each whole stamp with the time its
 * read returned. */
static void read_stamps(struct app *app)
{
    unsigned char buffer[64];
    memcpy(buffer, app->pending, app->pending_length);
    ssize_t n = recv(app->voip, buffer + app->pending_length, sizeof buffer - app->pending_length, MSG_DONTWAIT);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t read_returned = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
    if (n <= 0) {
        if (n == 0) app->peer_closed = 1;
        return;
    }
    size_t length = app->pending_length + (size_t)n, offset = 0;
    for (; length - offset >= 8; offset += 8) {
        uint64_t sent = 0;
        for (int byte = 7; byte >= 0; byte--) sent = sent << 8 | buffer[offset + byte];
        char line[80];
        int size = snprintf(line, sizeof line, "W %ld %llu %llu\n", app->index, (unsigned long long)sent,
                            (unsigned long long)read_returned);
        if (write(STDOUT_FILENO, line, (size_t)size) < 0) app->peer_closed = 1;
    }
    app->pending_length = length - offset;
    memcpy(app->pending, buffer + offset, app->pending_length);
}

/* Told that the socket is readable, the app reads it before acknowledging, as an app must:
 * voipd does not wake it again for data it was told about. */
static int on_event(voipd *v, const struct voipd_event *event, void *context)
{
    (void)v;
    struct app *app = context;
    if (event->kind == VOIPD_EVENT_VOIP_SOCKET_READABLE) read_stamps(app);
    if (event->kind == VOIPD_EVENT_WILL_TERMINATE) app->terminating = 1;
    return VOIPD_ACK_NOW;
}

static int connect_voip(const char *path)
{
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof address.sun_path) return -ENAMETOOLONG;
    strcpy(address.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        int error = -errno;
        close(fd);
        return error;
    }
    return fd;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    long index = -1, cpu = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--connect") == 0) path = argv[i + 1];
        else if (strcmp(argv[i], "--index") == 0) index = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--cpu") == 0) cpu = strtol(argv[i + 1], NULL, 10);
        else return fail(argv[i], EINVAL);
    }
    if (path == NULL || index < 0 || argc % 2 == 0) {
        fprintf(stderr, "usage: wake_app --connect PATH --index N [--cpu C]\n");
        return 1;
    }
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) < 0) return fail("sched_setaffinity", errno);
    }

    voipd *v;
    int status = voipd_open(&v, NULL);
    if (status < 0) return fail("voipd_open", status);
    if ((status = voipd_hello(v, NULL)) < 0) return fail("voipd_hello", status);
    struct app app = { .voip = connect_voip(path), .index = index };
    if (app.voip < 0) return fail(path, app.voip);
    if ((status = voipd_register_socket(v, "bench", app.voip)) < 0) return fail("voipd_register_socket", status);
    /* Registered: the bench may now send it to the background. */
    unsigned char announced[4] = { index & 0xff, index >> 8 & 0xff, index >> 16 & 0xff, index >> 24 & 0xff };
    if (write(app.voip, announced, sizeof announced) != sizeof announced) return fail("write(index)", errno);
    voipd_set_event_handler(v, on_event, &app);

    /* The app's loop: the VoIP socket first (that read is what is timed), then events. */
    struct pollfd watched[2] = { { .fd = app.voip, .events = POLLIN }, { .fd = voipd_get_fd(v), .events = POLLIN } };
    while (!app.peer_closed && !app.terminating) {
        if (poll(watched, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return fail("poll", errno);
        }
        if (watched[0].revents != 0) read_stamps(&app);
        /* It ends with voipd (the bench stops voipd to end the run). */
        if (watched[1].revents != 0 && voipd_dispatch(v) < 0) break;
    }
    voipd_close(v);
    return 0;
}

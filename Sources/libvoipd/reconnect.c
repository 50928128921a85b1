/* Reconnecting after voipd went away (docs/PROTOCOL.md "When voipd restarts"): a new
 * connection, hello under the same name, the sockets compared with what hello hands back
 * and registered again, the keep-alive set again, the open background tasks begun again;
 * by the app's call, or by voipd_dispatch() itself with a backoff timer. */
#define _GNU_SOURCE
#include "handle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

void vh_tell(voipd *v, int kind, const char *kind_name, const char *socket, const char *reason)
{
    if (v->handler == NULL || v->close_requested) return;
    struct voipd_event event = {
        .number = 0, .kind = kind, .kind_name = kind_name, .state = v->state, .reason = reason, .socket = socket,
        .connections_waiting = -1,
    };
    (void)v->handler(v, &event, v->context);
}

/* Whether two descriptors are the same open socket. */
static int same_socket(int a, int b)
{
    struct stat first, second;
    return fstat(a, &first) == 0 && fstat(b, &second) == 0 && first.st_dev == second.st_dev && first.st_ino == second.st_ino;
}

int vh_reconnect(voipd *v, int tell)
{
    if (v->path == NULL) return -EDESTADDRREQ;
    vh_disconnect(v);
    voipd_close_restored(v);
    v->lost = 0;                                        /* a reconnection is no loss to report */
    vh_update_pending(v);
    int connection = vh_connect_to(v->path);
    if (connection < 0) return connection;
    int attached = vh_attach(v, connection);
    if (attached < 0) {
        close(connection);
        return attached;
    }
    if (v->name[0] == '\0') return 0;                   /* no hello before: none now */
    char name[sizeof v->name];
    memcpy(name, v->name, sizeof name);
    int hello = voipd_hello(v, name);
    if (hello < 0) {
        vh_disconnect(v);
        v->lost = 0;
        vh_update_pending(v);
        return hello;
    }

    int first_error = 0;
    for (int i = 0; i < v->registered_count && v->connection >= 0 && !v->close_requested;) {
        struct vh_registered *socket = &v->registered[i];
        int held = vh_take_restored_fd(v, socket->name);
        if (held >= 0) {
            /* The same socket: a service manager kept it for voipd. Another: voipd holds an
             * older one the app has replaced; it lets go of that one, then takes ours. */
            int same = same_socket(held, socket->fd);
            close(held);
            if (same) {
                i++;
                continue;
            }
            vh_unregister(v, socket->name);
        }
        int registered = vh_register(v, socket->name, socket->fd);
        if (registered == 0) {
            i++;
            continue;
        }
        if (first_error == 0) first_error = registered;
        if (v->connection < 0) break;
        if (tell) vh_tell(v, VOIPD_EVENT_REGISTRATION_FAILED, "registrationFailed", socket->name, voipd_strerror(registered));
        close(socket->fd);
        v->registered[i] = v->registered[--v->registered_count];
    }
    if (v->keep_alive > 0 && v->connection >= 0) {
        int set = vh_set_keep_alive(v, v->keep_alive, v->reachable_for);
        if (set < 0 && first_error == 0) first_error = set;
    }
    if (v->call_active && v->connection >= 0) {
        int set = vh_set_call_active(v, 1);
        if (set < 0) v->call_active = 0;
        if (set < 0 && first_error == 0) first_error = set;
    }
    int tasks = vh_begin_tasks_again(v);
    if (tasks < 0 && first_error == 0) first_error = tasks;
    return first_error;
}

int voipd_reconnect(voipd *v)
{
    if (v == NULL) return -EINVAL;
    return vh_reconnect(v, 0);
}

static void arm(voipd *v, int milliseconds)
{
    struct itimerspec when = { .it_value = { .tv_sec = milliseconds / 1000, .tv_nsec = (long)(milliseconds % 1000) * 1000000 } };
    timerfd_settime(v->timer, 0, &when, NULL);
}

void vh_reconnect_automatically(voipd *v)
{
    if (v->connection >= 0 || v->close_requested) return;
    if (v->backoff_ms > 0) {
        /* Waiting for the timer: only its expiry makes an attempt. */
        uint64_t expirations;
        if (read(v->timer, &expirations, sizeof expirations) != sizeof expirations) return;
    }
    vh_reconnect(v, 1);
    if (v->close_requested) return;
    if (v->connection >= 0) {
        v->backoff_ms = 0;
        arm(v, 0);
        if (v->unavailable_told) {
            v->unavailable_told = 0;
            vh_tell(v, VOIPD_EVENT_SUPERVISOR_AVAILABLE, "supervisorAvailable", NULL, "connected to voipd again");
        }
        return;
    }
    /* At once first, then 100 ms doubling to 5 s, each delay between half and all of it, so
     * that the apps of a restarted voipd do not all come back in the same instant. */
    v->backoff_ms = v->backoff_ms == 0 ? VH_RECONNECT_FIRST_MS
        : v->backoff_ms * 2 > VH_RECONNECT_MAX_MS ? VH_RECONNECT_MAX_MS : v->backoff_ms * 2;
    v->random ^= v->random << 13;
    v->random ^= v->random >> 7;
    v->random ^= v->random << 17;
    arm(v, v->backoff_ms / 2 + (int)(v->random % (uint64_t)(v->backoff_ms / 2 + 1)));
}

int voipd_set_reconnect(voipd *v, int automatic)
{
    if (v == NULL) return -EINVAL;
    if (!automatic) {
        v->automatic = 0;
        if (v->timer >= 0) arm(v, 0);
        v->backoff_ms = 0;
        return 0;
    }
    if (v->path == NULL) return -EDESTADDRREQ;
    if (v->timer < 0) {
        v->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (v->timer < 0) return -errno;
        struct epoll_event event = { .events = EPOLLIN, .data.fd = v->timer };
        if (epoll_ctl(v->poll_fd, EPOLL_CTL_ADD, v->timer, &event) < 0) {
            int error = -errno;
            close(v->timer);
            v->timer = -1;
            return error;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        v->random = (uint64_t)now.tv_nsec ^ (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)v;
        if (v->random == 0) v->random = 1;
    }
    v->automatic = 1;
    return 0;
}

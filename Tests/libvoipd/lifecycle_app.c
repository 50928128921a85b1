/*
 * A C app on libvoipd, run under voipd by the tests (LibvoipdTests), under valgrind.
 * Usage: lifecycle_app HOST PORT [--auto-reconnect]. It says hello; takes back the socket
 * "sip" if voipd handed it back, else connects to HOST:PORT and registers the connection as
 * "sip"; then prints every event and every line its peer sends, until the peer sends "exit"
 * (it then frees everything and exits 0). If voipd goes away it reconnects, every 100 ms,
 * with voipd_reconnect(); with --auto-reconnect, voipd_dispatch() does it by itself, and the
 * app keeps a keep-alive (saying it stays reachable for 300 s) and a background task open
 * for it to restore. Every line it prints
 * starts with its pid.
 */
#define _GNU_SOURCE
#include <voipd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static voipd *v;
static int sip = -1;
static int quitting;
static char pending_line[256];
static size_t pending_length;

static void say(const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    printf("%d ", (int)getpid());
    vprintf(format, arguments);
    printf("\n");
    fflush(stdout);
    va_end(arguments);
}

static int connect_tcp(const char *host, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (fd < 0 || inet_pton(AF_INET, host, &address.sin_addr) != 1
        || connect(fd, (struct sockaddr *)&address, sizeof address) < 0) {
        perror("connect");
        exit(1);
    }
    return fd;
}

/* Reads what the peer sent, if anything (never blocks: the handler may have read it). */
static void read_sip(void)
{
    char data[512];
    ssize_t n = recv(sip, data, sizeof data, MSG_DONTWAIT);
    if (n == 0) {
        say("peer hung up");
        quitting = 1;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        if (data[i] != '\n' && pending_length < sizeof pending_line - 1) {
            pending_line[pending_length++] = data[i];
            continue;
        }
        if (data[i] != '\n') continue;
        pending_line[pending_length] = '\0';
        say("peer: %s", pending_line);
        if (strcmp(pending_line, "exit") == 0) quitting = 1;
        pending_length = 0;
    }
}

static int on_event(voipd *handle, const struct voipd_event *event, void *context)
{
    (void)context;
    say("event: %s -> %s%s%s", event->kind_name, voipd_state_name(event->state),
        event->socket != NULL ? " " : "", event->socket != NULL ? event->socket : "");
    switch (event->kind) {
    case VOIPD_EVENT_DID_ENTER_BACKGROUND: {
        /* A request from inside the handler, as apps do to finish work. */
        uint64_t task = 0;
        int begun = voipd_begin_background_task(handle, "flush", &task);
        int ended = task > 0 ? voipd_end_background_task(handle, task) : -1;
        say("background task %llu: %s, %s", (unsigned long long)task, voipd_strerror(begun), voipd_strerror(ended));
        break;
    }
    case VOIPD_EVENT_VOIP_SOCKET_READABLE:
        if (event->socket != NULL && strcmp(event->socket, "sip") == 0) read_sip();
        break;
    default:
        break;
    }
    return VOIPD_ACK_NOW;
}

/* The API's answers a test can check: retrieve, keep-alive, refusals, the call state. */
static void exercise(void)
{
    int copy = voipd_retrieve_socket(v, "sip");
    struct stat mine, theirs;
    int same = copy >= 0 && fstat(copy, &theirs) == 0 && fstat(sip, &mine) == 0 && mine.st_ino == theirs.st_ino;
    say("retrieved sip: %s", copy < 0 ? voipd_strerror(copy) : same ? "same socket" : "another socket");
    if (copy >= 0) close(copy);
    say("keep-alive 600: %s", voipd_strerror(voipd_set_keep_alive_timeout(v, 600)));
    say("keep-alive 1: %s (%s)", voipd_strerror(voipd_set_keep_alive_timeout(v, 1)), voipd_error_code(v));
    say("keep-alive cleared: %s", voipd_strerror(voipd_set_keep_alive_timeout(v, 0)));
    int refused = voipd_unregister_socket(v, "nothing");
    say("unregister nothing: %d %s", refused == VOIPD_ERR_NO_SUCH_SOCKET, voipd_error_code(v));
    say("register a bad name: %d", voipd_register_socket(v, "bad name!", sip) == -EINVAL);
    const char *began = voipd_strerror(voipd_set_call_active(v, 1));
    say("call active: %s, ended: %s", began, voipd_strerror(voipd_set_call_active(v, 0)));
}

int main(int argc, char **argv)
{
    int automatic = argc == 4 && strcmp(argv[3], "--auto-reconnect") == 0;
    if (argc != 3 && !automatic) {
        fprintf(stderr, "usage: lifecycle_app HOST PORT [--auto-reconnect]\n");
        return 2;
    }
    int status = voipd_open(&v, NULL);
    if (status == 0) status = voipd_hello(v, NULL);
    if (status < 0) {
        say("hello failed: %s", voipd_strerror(status));
        voipd_close(v);
        return 1;
    }
    say("hello: %s, %d restored, api %d", voipd_state_name(voipd_state(v)), voipd_restored_count(v), voipd_api_version());
    say("keep-alive minimum %g s, time scale %g", voipd_keep_alive_minimum(v), voipd_time_scale(v));
    sip = voipd_take_restored(v, "sip");
    if (sip >= 0) {
        say("restored sip");
    } else {
        sip = connect_tcp(argv[1], atoi(argv[2]));
        status = voipd_register_socket(v, "sip", sip);
        say("registered sip: %s", status == 0 ? "ok" : voipd_strerror(status));
        exercise();
    }
    voipd_close_restored(v);
    voipd_set_event_handler(v, on_event, NULL);
    if (automatic) {
        uint64_t task = 0;
        int set = voipd_set_reconnect(v, 1);
        int keep_alive = voipd_set_keep_alive_reachable(v, 600, 300);
        int begun = voipd_begin_background_task(v, "long", &task);
        say("automatic reconnection: %s; keep-alive: %s; task %llu: %s", voipd_strerror(set), voipd_strerror(keep_alive),
            (unsigned long long)task, voipd_strerror(begun));
    }

    int connected = 1;
    while (!quitting) {
        struct pollfd fds[2] = { { .fd = voipd_get_fd(v), .events = POLLIN }, { .fd = sip, .events = POLLIN } };
        /* Disconnected: try again every 100 ms (voipd restarting). */
        int ready = poll(fds, 2, connected ? -1 : 100);
        if (ready < 0 && errno != EINTR) {
            perror("poll");
            break;
        }
        if (!connected) {
            status = voipd_reconnect(v);
            if (status == 0) {
                connected = 1;
                say("reconnected: %s", voipd_state_name(voipd_state(v)));
            } else if (status != -ENOENT && status != -ECONNREFUSED) {
                say("reconnect: %s", voipd_strerror(status));
            }
        }
        if (connected && (fds[0].revents & POLLIN)) {
            status = voipd_dispatch(v);
            if (status == -ECONNRESET || status == -ENOTCONN) {
                say("disconnected");
                connected = 0;
            } else if (status < 0) {
                say("dispatch: %s", voipd_strerror(status));
                break;
            }
        }
        if (fds[1].revents & (POLLIN | POLLHUP)) read_sip();
    }
    say("exiting");
    voipd_close(v);
    close(sip);
    return 0;
}

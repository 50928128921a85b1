/* The handle and its control connection: opening, the wait for a reply, closing,
 * reconnecting. */
#define _GNU_SOURCE                 /* accept4-era flags: SOCK_CLOEXEC, MSG_CMSG_CLOEXEC */
#include "handle.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The socket path as voipd resolves it (docs/PROTOCOL.md "Where the socket is"). */
static const char *resolve_path(const char *explicit_path, char *scratch, size_t size)
{
    if (explicit_path != NULL && explicit_path[0] != '\0') return explicit_path;
    const char *variable = getenv("VOIPD_SOCKET");
    if (variable != NULL && variable[0] != '\0') return variable;
    if (geteuid() == 0) return "/run/voipd/voipd.sock";
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (runtime == NULL || runtime[0] == '\0') return NULL;
    size_t length = strlen(runtime);
    if (length + sizeof "/voipd.sock" > size) return "";        /* too long: refused below */
    memcpy(scratch, runtime, length);
    memcpy(scratch + length, "/voipd.sock", sizeof "/voipd.sock");
    return scratch;
}

int vh_connect_to(const char *path)
{
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    size_t length = strlen(path);
    if (length == 0 || length >= sizeof address.sun_path) return -ENAMETOOLONG;
    memcpy(address.sun_path, path, length + 1);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    if (connect(fd, (struct sockaddr *)&address, sizeof address) == 0) return fd;
    int error = errno;
    if (error == EINTR) {
        /* The connection goes on in the background: wait for it, then ask how it went. */
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int ready;
        do ready = poll(&p, 1, -1); while (ready < 0 && errno == EINTR);
        socklen_t size = sizeof error;
        if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) < 0) error = errno;
        if (error == 0) return fd;
    }
    close(fd);
    return -error;
}

int vh_attach(voipd *v, int connection)
{
    struct epoll_event event = { .events = EPOLLIN, .data.fd = connection };
    if (epoll_ctl(v->poll_fd, EPOLL_CTL_ADD, connection, &event) < 0) return -errno;
    v->connection = connection;
    return 0;
}

/* A new handle around `connection` (closed on failure). */
static int make_handle(voipd **out, int connection, const char *path)
{
    voipd *v = calloc(1, sizeof *v);
    if (v == NULL) {
        close(connection);
        return -ENOMEM;
    }
    v->connection = -1;
    v->poll_fd = -1;
    v->pending = -1;
    v->timer = -1;
    v->timeout_ms = VH_DEFAULT_TIMEOUT_MS;
    v->next_id = 1;
    v->keep_alive_minimum = 600;
    v->time_scale = 1;
    int error = 0;
    if (path != NULL && (v->path = strdup(path)) == NULL) error = -ENOMEM;
    if (error == 0 && (v->poll_fd = epoll_create1(EPOLL_CLOEXEC)) < 0) error = -errno;
    if (error == 0 && (v->pending = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) error = -errno;
    if (error == 0) {
        struct epoll_event event = { .events = EPOLLIN, .data.fd = v->pending };
        if (epoll_ctl(v->poll_fd, EPOLL_CTL_ADD, v->pending, &event) < 0) error = -errno;
    }
    if (error == 0) error = vh_attach(v, connection);
    if (error < 0) {
        if (v->connection < 0) close(connection);
        vh_destroy(v);
        return error;
    }
    *out = v;
    return 0;
}

int voipd_open(voipd **out, const char *socket_path)
{
    if (out == NULL) return -EINVAL;
    *out = NULL;
    char scratch[sizeof ((struct sockaddr_un *)0)->sun_path + 1];
    const char *path = resolve_path(socket_path, scratch, sizeof scratch);
    if (path == NULL) return -EDESTADDRREQ;
    int connection = vh_connect_to(path);
    if (connection < 0) return connection;
    return make_handle(out, connection, path);
}

int voipd_open_fd(voipd **out, int fd)
{
    if (out == NULL) {
        if (fd >= 0) close(fd);
        return -EINVAL;
    }
    *out = NULL;
    if (fd < 0 || fcntl(fd, F_GETFD) < 0) return -EBADF;
    int domain = 0, type = 0;
    socklen_t size = sizeof domain;
    int error = 0;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) < 0) error = errno == ENOTSOCK ? -ENOTSOCK : -errno;
    size = sizeof type;
    if (error == 0 && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) < 0) error = -errno;
    if (error == 0 && (domain != AF_UNIX || type != SOCK_SEQPACKET)) error = -EPROTOTYPE;
    if (error == 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) error = -errno;
    if (error < 0) {
        close(fd);
        return error;
    }
    return make_handle(out, fd, NULL);
}

void vh_destroy(voipd *v)
{
    vh_disconnect(v);
    voipd_close_restored(v);
    for (int i = 0; i < v->registered_count; i++) close(v->registered[i].fd);
    if (v->poll_fd >= 0) close(v->poll_fd);
    if (v->pending >= 0) close(v->pending);
    if (v->timer >= 0) close(v->timer);
    vh_free_tasks(v);
    free(v->path);
    free(v);
}

void voipd_close(voipd *v)
{
    if (v == NULL) return;
    if (v->dispatching > 0) {
        v->close_requested = 1;
        return;
    }
    vh_destroy(v);
}

int voipd_set_timeout(voipd *v, int milliseconds)
{
    if (v == NULL || milliseconds < -1) return -EINVAL;
    v->timeout_ms = milliseconds;
    return 0;
}

int voipd_get_fd(const voipd *v)
{
    return v == NULL ? -EINVAL : v->poll_fd;
}

void vh_disconnect(voipd *v)
{
    if (v->connection >= 0) {
        epoll_ctl(v->poll_fd, EPOLL_CTL_DEL, v->connection, NULL);
        close(v->connection);
        v->connection = -1;
        /* Also when a request found it lost: the app's poll loop learns it from dispatch. */
        v->lost = 1;
    }
    v->unacknowledged_count = 0;
    vh_drop_events(v);
    vh_update_pending(v);
}

uint64_t vh_next_id(voipd *v)
{
    /* Ids stay below 2^53 (clients whose JSON numbers are doubles read them right) and
     * never 0, which voipd uses for errors it cannot tie to a request. */
    if (v->next_id == 0 || v->next_id >= (UINT64_C(1) << 53)) v->next_id = 1;
    return v->next_id++;
}

static long long now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Reads the reply frame in v->frame: 1 and *reply set when it answers `id`; 0 when it is
 * another reply (an error voipd could not tie to a request is remembered); a refusal; or
 * -EPROTO. */
static int read_reply(voipd *v, uint64_t id, struct vh_reply *reply)
{
    struct vj root, value, error_object;
    uint64_t reply_id;
    int ok;
    if (vj_parse_object(v->frame.body, v->frame.length, &root) < 0
        || vj_get(root, "id", &value) != 1 || vj_u64(value, &reply_id) < 0
        || vj_get(root, "ok", &value) != 1 || vj_bool(value, &ok) < 0)
        return -EPROTO;
    if (reply_id != id && reply_id != 0) return 0;           /* late: a request that timed out */
    if (ok) {
        if (reply_id != id) return 0;
        if (vj_get(root, "result", &reply->result) != 1 || vj_type(reply->result) != VJ_OBJECT) return -EPROTO;
        return 1;
    }
    char code[64], message[512];
    if (vj_get(root, "error", &error_object) != 1 || vj_get(error_object, "code", &value) != 1
        || vj_string(value, code, sizeof code, NULL) < 0)
        return -EPROTO;
    message[0] = '\0';
    if (vj_get(error_object, "message", &value) == 1 && vj_string(value, message, sizeof message, NULL) < 0) {
        /* A message too long for the buffer: keep the code, say so. */
        strcpy(message, "(message too long)");
    }
    int refusal = vh_refusal(v, code, message);
    /* An error with id 0 answers no request of ours in particular (one found before voipd
     * read the body): voipd closes the connection after the fatal ones, so wait on. */
    return reply_id == id ? refusal : 0;
}

/* Waits until the connection is ready for `events` or the deadline (-1: none) passes.
 * 0, -ETIMEDOUT, or a negated errno. */
static int wait_for(voipd *v, short events, long long deadline)
{
    int wait = -1;
    if (deadline >= 0) {
        long long left = deadline - now_ms();
        if (left <= 0) return -ETIMEDOUT;
        wait = left > 1000000 ? 1000000 : (int)left;
    }
    struct pollfd p = { .fd = v->connection, .events = events };
    if (poll(&p, 1, wait) < 0 && errno != EINTR) return -errno;
    return 0;
}

int vh_send(voipd *v, uint16_t type, const char *body, long length, const int *fds, int nfds, long long deadline)
{
    if (length < 0) return -EINVAL;
    for (;;) {
        if (v->connection < 0) return -ENOTCONN;
        int sent = vf_send(v->connection, type, body, (size_t)length, fds, nfds);
        if (sent == -EAGAIN) {
            /* voipd is not reading: wait for room, as long as a reply would be waited for. */
            int waited = wait_for(v, POLLOUT, deadline);
            if (waited < 0) return waited;
            continue;
        }
        if (sent == -EPIPE || sent == -ECONNRESET) {
            vh_disconnect(v);
            return -ECONNRESET;
        }
        return sent;
    }
}

long long vh_deadline(const voipd *v)
{
    return v->timeout_ms < 0 ? -1 : now_ms() + v->timeout_ms;
}

int vh_call(voipd *v, uint16_t type, const char *body, long length, uint64_t id,
            const int *fds, int nfds, struct vh_reply *reply)
{
    long long deadline = vh_deadline(v);
    int sent = vh_send(v, type, body, length, fds, nfds, deadline);
    if (sent < 0) return sent;
    for (;;) {
        int received = vf_receive(v->connection, &v->buffer, &v->frame, 1);
        if (received == -EAGAIN) {
            int waited = wait_for(v, POLLIN, deadline);
            if (waited < 0) return waited;
            continue;
        }
        if (received <= 0) {
            vh_disconnect(v);
            return received == 0 || received == -ECONNRESET ? -ECONNRESET : received;
        }
        if (v->frame.type != VF_REPLY) {
            int taken = vh_take_frame(v);
            if (taken < 0) {
                vh_disconnect(v);
                return taken;
            }
            continue;
        }
        int answered = read_reply(v, id, reply);
        if (answered == 1) return 0;
        vf_close_fds(&v->frame);
        if (answered == -EPROTO) {
            vh_disconnect(v);
            return -EPROTO;
        }
        if (answered < 0) return answered;
    }
}

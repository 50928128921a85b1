/* The C essentials of docs/PROTOCOL.md: voipd_send and voipd_recv are copied from the
 * document (keep them identical), followed by a small check against a running voipd.
 * Build: gcc -Wall -Wextra -Werror -std=c11 -o c_essentials c_essentials.c
 * (Tests/VoipdIntegrationTests/ProtocolClientTests.swift builds and runs it). */
#define _GNU_SOURCE                 /* MSG_CMSG_CLOEXEC */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { VOIPD_HEADER = 8, VOIPD_MAX_FRAME = 65536, VOIPD_MAX_FDS = 253 };

/* Sends one frame: header + JSON body, with `nfds` descriptors as SCM_RIGHTS in the same
 * sendmsg; the header's descriptor count is nfds. Returns 0, or -1 with errno set. */
static int voipd_send(int ctl, uint16_t type, const char *json, const int *fds, int nfds)
{
    static unsigned char packet[VOIPD_MAX_FRAME];
    size_t len = strlen(json);
    if (VOIPD_HEADER + len > sizeof packet || nfds < 0 || nfds > VOIPD_MAX_FDS) { errno = EMSGSIZE; return -1; }
    packet[0] = len & 0xff; packet[1] = len >> 8 & 0xff; packet[2] = len >> 16 & 0xff; packet[3] = len >> 24 & 0xff;
    packet[4] = type & 0xff; packet[5] = type >> 8;
    packet[6] = (unsigned char)nfds;
    packet[7] = 1;                                          /* protocol version */
    memcpy(packet + VOIPD_HEADER, json, len);

    struct iovec iov = { .iov_base = packet, .iov_len = VOIPD_HEADER + len };
    union { struct cmsghdr align; char buf[CMSG_SPACE(VOIPD_MAX_FDS * sizeof(int))]; } control;
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    if (nfds > 0) {
        memset(&control, 0, sizeof control);
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    ssize_t n;
    do n = sendmsg(ctl, &msg, MSG_NOSIGNAL); while (n < 0 && errno == EINTR);
    return n == (ssize_t)iov.iov_len ? 0 : -1;
}

struct voipd_frame {
    uint16_t type;
    uint32_t length;                    /* of body */
    char body[VOIPD_MAX_FRAME + 1];     /* the JSON, NUL-terminated */
    int fds[VOIPD_MAX_FDS];             /* received descriptors (close-on-exec): yours to close */
    int nfds;
};

/* Receives one frame. Returns 1; 0 when voipd closed the connection; -1 with errno set
 * (EPROTO for a malformed frame, whose descriptors are then already closed). */
static int voipd_recv(int ctl, struct voipd_frame *f)
{
    static unsigned char packet[VOIPD_MAX_FRAME];
    union { struct cmsghdr align; char buf[CMSG_SPACE(VOIPD_MAX_FDS * sizeof(int))]; } control;
    struct iovec iov = { .iov_base = packet, .iov_len = sizeof packet };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.buf, .msg_controllen = sizeof control.buf };
    ssize_t n;
    do n = recvmsg(ctl, &msg, MSG_CMSG_CLOEXEC); while (n < 0 && errno == EINTR);
    if (n <= 0) return (int)n;

    f->nfds = 0;                                            /* take every descriptor first */
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        if (count > VOIPD_MAX_FDS - f->nfds) count = VOIPD_MAX_FDS - f->nfds;
        memcpy(f->fds + f->nfds, CMSG_DATA(c), count * sizeof(int));
        f->nfds += count;
    }
    uint32_t len = n < VOIPD_HEADER ? 0
        : packet[0] | packet[1] << 8 | packet[2] << 16 | (uint32_t)packet[3] << 24;
    if (n < VOIPD_HEADER || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || packet[7] != 1
        || len != (uint32_t)(n - VOIPD_HEADER) || packet[6] != f->nfds) {
        for (int i = 0; i < f->nfds; i++) close(f->fds[i]);
        f->nfds = 0;
        errno = EPROTO;
        return -1;
    }
    f->type = packet[4] | packet[5] << 8;
    f->length = len;
    memcpy(f->body, packet + VOIPD_HEADER, len);
    f->body[len] = '\0';
    return 1;
}

/* ---- Not in PROTOCOL.md: a check of the functions above against a running voipd. ---- */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/un.h>

static struct voipd_frame frame;

/* Sends a request and returns 1 when its reply says ok (events that come first are skipped). */
static int request(int ctl, uint16_t type, const char *json, const int *fds, int nfds)
{
    if (voipd_send(ctl, type, json, fds, nfds) < 0) { perror("voipd_send"); return 0; }
    for (;;) {
        int r = voipd_recv(ctl, &frame);
        if (r <= 0) { fprintf(stderr, "voipd_recv: %s\n", r == 0 ? "connection closed" : strerror(errno)); return 0; }
        if (frame.type == 128) break;
        for (int i = 0; i < frame.nfds; i++) close(frame.fds[i]);
    }
    printf("<< %u %d %s\n", frame.type, frame.nfds, frame.body);
    return strstr(frame.body, "\"ok\":true") != NULL;
}

/* Usage: c_essentials [SOCKET [APP-NAME]]. Registers one end of a socket pair as a VoIP
 * socket; retrieves it, and checks that the descriptor received is the same socket, carries
 * its data and is close-on-exec; reconnects, and checks that hello hands it back the same way;
 * unregisters it. Prints "ok" and exits 0 when everything holds. */

static int connect_to(const char *path)
{
    int ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    strncpy(addr.sun_path, path, sizeof addr.sun_path - 1);
    if (connect(ctl, (struct sockaddr *)&addr, sizeof addr) < 0) { perror(path); exit(1); }
    return ctl;
}

/* Whether `fd` is the socket `original`, readable through it, and close-on-exec. */
static int same_socket(int fd, int original, int peer)
{
    struct stat a, b;
    char byte = 0;
    fstat(original, &a);
    fstat(fd, &b);
    int cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC;
    if (write(peer, "x", 1) != 1 || read(fd, &byte, 1) != 1) { perror("read"); return 0; }
    if (a.st_ino == b.st_ino && byte == 'x' && cloexec) return 1;
    fprintf(stderr, "descriptor %d: same socket %d, data %d, close-on-exec %d\n",
            fd, a.st_ino == b.st_ino, byte == 'x', cloexec != 0);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : getenv("VOIPD_SOCKET");
    const char *name = argc > 2 ? argv[2] : "c-essentials";
    if (path == NULL) { fprintf(stderr, "usage: c_essentials SOCKET [NAME] (or set VOIPD_SOCKET)\n"); return 2; }

    char hello[256];
    snprintf(hello, sizeof hello, "{\"id\":1,\"name\":\"%s\"}", name);
    int ctl = connect_to(path);
    if (!request(ctl, 1, hello, NULL, 0)) return 1;
    for (int i = 0; i < frame.nfds; i++) close(frame.fds[i]);        /* sockets of an earlier run */

    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) { perror("socketpair"); return 1; }
    if (!request(ctl, 3, "{\"id\":2,\"name\":\"c-sip\"}", NULL, 0)) { /* not held before: fine */ }
    if (!request(ctl, 2, "{\"id\":3,\"name\":\"c-sip\"}", &pair[0], 1)) return 1;

    if (!request(ctl, 4, "{\"id\":4,\"name\":\"c-sip\"}", NULL, 0) || frame.nfds != 1) return 1;
    if (!same_socket(frame.fds[0], pair[0], pair[1])) return 1;
    close(frame.fds[0]);

    close(ctl);                                 /* a new connection: hello hands the socket back */
    ctl = connect_to(path);                     /* (voipd need not have seen the old one close) */
    if (!request(ctl, 1, hello, NULL, 0)) return 1;
    if (frame.nfds != 1 || strstr(frame.body, "\"sockets\":[\"c-sip\"]") == NULL) {
        fprintf(stderr, "hello handed back %d descriptors\n", frame.nfds);
        return 1;
    }
    if (!same_socket(frame.fds[0], pair[0], pair[1])) return 1;
    close(frame.fds[0]);

    if (!request(ctl, 3, "{\"id\":5,\"name\":\"c-sip\"}", NULL, 0)) return 1;
    printf("ok\n");
    return 0;
}

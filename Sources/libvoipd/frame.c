/* Frames on the control connection: the "C essentials" of docs/PROTOCOL.md, with every
 * length and count of a received packet checked before it is used. */
#define _GNU_SOURCE                 /* MSG_CMSG_CLOEXEC */
#include "frame.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int vf_send(int fd, uint16_t type, const char *body, size_t length, const int *fds, int nfds)
{
    if (length > VF_MAX_PACKET - VF_HEADER) return -EMSGSIZE;
    if (nfds < 0 || nfds > VF_MAX_SENT_FDS || (nfds > 0 && fds == NULL)) return -EINVAL;
    unsigned char header[VF_HEADER] = {
        (unsigned char)(length & 0xff), (unsigned char)(length >> 8 & 0xff),
        (unsigned char)(length >> 16 & 0xff), (unsigned char)(length >> 24 & 0xff),
        (unsigned char)(type & 0xff), (unsigned char)(type >> 8),
        (unsigned char)nfds, 1
    };
    /* Header and body in one sendmsg: one packet, one frame. */
    struct iovec iov[2] = {
        { .iov_base = header, .iov_len = sizeof header },
        { .iov_base = (void *)body, .iov_len = length },
    };
    ssize_t sent = vf_sendmsg(fd, iov, length > 0 ? 2 : 1, fds, nfds, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) return sent == -EWOULDBLOCK ? -EAGAIN : (int)sent;
    return (size_t)sent == VF_HEADER + length ? 0 : -EMSGSIZE;
}

ssize_t vf_sendmsg(int fd, const struct iovec *iov, int iovcnt, const int *fds, int nfds, int flags)
{
    if (nfds < 0 || nfds > VF_MAX_RECEIVED_FDS || (nfds > 0 && fds == NULL)) return -EINVAL;
    union { struct cmsghdr align; char buf[CMSG_SPACE(VF_MAX_RECEIVED_FDS * sizeof(int))]; } control;
    struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)iovcnt };
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
    ssize_t sent;
    do sent = sendmsg(fd, &msg, flags); while (sent < 0 && errno == EINTR);
    return sent < 0 ? -errno : sent;
}

void vf_close_fds(struct vf_frame *frame)
{
    for (int i = 0; i < frame->nfds; i++) close(frame->fds[i]);
    frame->nfds = 0;
}

int vf_receive(int fd, struct vf_buffer *buffer, struct vf_frame *frame, int dontwait)
{
    union { struct cmsghdr align; char buf[CMSG_SPACE(VF_MAX_RECEIVED_FDS * sizeof(int))]; } control;
    struct iovec iov = { .iov_base = buffer->packet, .iov_len = VF_MAX_PACKET };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
                          .msg_control = control.buf, .msg_controllen = sizeof control.buf };
    ssize_t n;
    do n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | (dontwait ? MSG_DONTWAIT : 0)); while (n < 0 && errno == EINTR);
    frame->nfds = 0;
    if (n < 0) return errno == EWOULDBLOCK ? -EAGAIN : -errno;

    /* Every descriptor first, so that a malformed packet never leaks one. */
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0)) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        if (count > (size_t)(VF_MAX_RECEIVED_FDS - frame->nfds)) count = (size_t)(VF_MAX_RECEIVED_FDS - frame->nfds);
        memcpy(frame->fds + frame->nfds, CMSG_DATA(c), count * sizeof(int));
        frame->nfds += (int)count;
    }
    if (n == 0 && frame->nfds == 0) return 0;
    const unsigned char *p = buffer->packet;
    uint32_t length = n < VF_HEADER ? 0 : (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (n < VF_HEADER || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || p[7] != 1
        || length != (uint32_t)(n - VF_HEADER) || p[6] != frame->nfds) {
        vf_close_fds(frame);
        return -EPROTO;
    }
    frame->type = (uint16_t)(p[4] | p[5] << 8);
    frame->length = length;
    buffer->packet[n] = '\0';
    frame->body = (const char *)buffer->packet + VF_HEADER;
    return 1;
}

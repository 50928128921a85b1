/*
 * Frames on the control connection (docs/PROTOCOL.md "Frames"): one packet each, an 8-byte
 * little-endian header and a JSON body, descriptors as SCM_RIGHTS in the same packet.
 * Internal to libvoipd.
 */
#ifndef VOIPD_FRAME_H
#define VOIPD_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define VF_HIDDEN __attribute__((visibility("hidden")))

enum {
    VF_HEADER = 8,
    VF_MAX_PACKET = 65536,          /* header included, either direction */
    VF_MAX_RECEIVED_FDS = 253,      /* the kernel's SCM_MAX_FD: the most voipd may send */
    VF_MAX_SENT_FDS = 4             /* the most voipd accepts in one packet */
};

/* Message types this library sends or reads. */
enum {
    VF_HELLO = 1, VF_REGISTER_SOCKET = 2, VF_UNREGISTER_SOCKET = 3, VF_RETRIEVE_SOCKET = 4,
    VF_ACKNOWLEDGE = 5, VF_BEGIN_BACKGROUND_TASK = 6, VF_END_BACKGROUND_TASK = 7,
    VF_SET_KEEP_ALIVE_TIMEOUT = 8, VF_SET_AUDIO_SESSION_ACTIVE = 9,
    VF_REPLY = 128, VF_EVENT = 129, VF_TRANSITION = 130
};

/* A received frame. The body points into the receive buffer and is NUL-terminated; the
 * descriptors are the receiver's to close. */
struct vf_frame {
    uint16_t type;
    uint32_t length;
    const char *body;
    int fds[VF_MAX_RECEIVED_FDS];
    int nfds;
};

/* The receive buffer: a packet and a NUL after the longest body. */
struct vf_buffer {
    unsigned char packet[VF_MAX_PACKET + 1];
};

/* One sendmsg of `iov` with `nfds` descriptors attached as SCM_RIGHTS (at most
 * VF_MAX_RECEIVED_FDS, the kernel's limit), retried on EINTR: the bytes sent, or a negated
 * errno. No checks of what the bytes say (a test's fake voipd sends malformed frames by it). */
VF_HIDDEN ssize_t vf_sendmsg(int fd, const struct iovec *iov, int iovcnt, const int *fds, int nfds, int flags);

/* Sends one frame without blocking: 0, or a negated errno (-EMSGSIZE for a body too long,
 * -EAGAIN when the socket's buffer is full: voipd is not reading). */
VF_HIDDEN int vf_send(int fd, uint16_t type, const char *body, size_t length, const int *fds, int nfds);

/* Receives one frame: 1; 0 at end of file; -EAGAIN if none is waiting (with `dontwait`);
 * -EPROTO for a malformed packet (its descriptors already closed); another negated errno. */
VF_HIDDEN int vf_receive(int fd, struct vf_buffer *buffer, struct vf_frame *frame, int dontwait);

/* Closes the frame's descriptors. */
VF_HIDDEN void vf_close_fds(struct vf_frame *frame);

#endif

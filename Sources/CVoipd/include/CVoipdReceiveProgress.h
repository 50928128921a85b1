// How far a socket's receiving has got: TCP_INFO's layout as the running kernel's headers
// give it (glibc's netinet/tcp.h stops before tcpi_bytes_received), and SIOCGSTAMPNS.
// No logic here.
#ifndef CVOIPD_RECEIVE_PROGRESS_H
#define CVOIPD_RECEIVE_PROGRESS_H

#include <stddef.h>
#include <time.h>

/// `sizeof(struct tcp_info)` of linux/tcp.h: the buffer to offer `getsockopt(TCP_INFO)`.
extern const size_t voipd_TCP_INFO_SIZE;
/// Where `tcpi_bytes_received` (Linux 4.1) lies in it; a kernel that fills in less has none.
extern const size_t voipd_TCPI_BYTES_RECEIVED_OFFSET;
/// Where `tcpi_unacked` lies: for a listening socket, the length of its accept queue.
extern const size_t voipd_TCPI_UNACKED_OFFSET;
extern const int voipd_TCP_INFO;

extern const unsigned long voipd_SIOCGSTAMPNS;
/// `ioctl(fd, request, struct timespec *)`: ioctl is variadic, which Swift cannot call.
int voipd_ioctl_timespec(int fd, unsigned long request, struct timespec *value);

#endif

#define _GNU_SOURCE
#include "CVoipdReceiveProgress.h"
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <sys/ioctl.h>

const size_t voipd_TCP_INFO_SIZE = sizeof(struct tcp_info);
const size_t voipd_TCPI_BYTES_RECEIVED_OFFSET = offsetof(struct tcp_info, tcpi_bytes_received);
const size_t voipd_TCPI_UNACKED_OFFSET = offsetof(struct tcp_info, tcpi_unacked);
const int voipd_TCP_INFO = TCP_INFO;

const unsigned long voipd_SIOCGSTAMPNS = SIOCGSTAMPNS;

int voipd_ioctl_timespec(int fd, unsigned long request, struct timespec *value) { return ioctl(fd, request, value); }

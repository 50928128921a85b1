#define _GNU_SOURCE
#include "CVoipdMemory.h"
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef SO_MEMINFO
#define SO_MEMINFO 55
#endif

const int voipd_MADV_PAGEOUT = MADV_PAGEOUT;
const int voipd_MADV_COLD = MADV_COLD;
const int voipd_MADV_WILLNEED = MADV_WILLNEED;

ssize_t voipd_process_madvise(int pidfd, const struct iovec *ranges, size_t count, int advice, unsigned int flags)
{
    return (ssize_t)syscall(SYS_process_madvise, pidfd, ranges, count, advice, flags);
}

const int voipd_SO_MEMINFO = SO_MEMINFO;
const int voipd_SK_MEMINFO_VARS = SK_MEMINFO_VARS;
const int voipd_SK_MEMINFO_RMEM_ALLOC = SK_MEMINFO_RMEM_ALLOC;
const int voipd_SK_MEMINFO_RCVBUF = SK_MEMINFO_RCVBUF;
const int voipd_SK_MEMINFO_DROPS = SK_MEMINFO_DROPS;
const int voipd_SK_MEMINFO_WMEM_ALLOC = SK_MEMINFO_WMEM_ALLOC;
const unsigned long voipd_SIOCINQ = SIOCINQ;
const unsigned long voipd_SIOCOUTQ = SIOCOUTQ;

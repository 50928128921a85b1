// Another process's memory and a socket's receive queue: process_madvise and the constants
// its callers need, SO_MEMINFO's indices, SIOCINQ and SIOCOUTQ. No logic here.
#ifndef CVOIPD_MEMORY_H
#define CVOIPD_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

extern const int voipd_MADV_PAGEOUT;
extern const int voipd_MADV_COLD;
extern const int voipd_MADV_WILLNEED;

/// `process_madvise(2)` (Linux 5.10; no glibc wrapper before 2.36): advice about the memory
/// of the process behind `pidfd`. Returns the bytes advised, or -1 with errno.
ssize_t voipd_process_madvise(int pidfd, const struct iovec *ranges, size_t count, int advice, unsigned int flags);

extern const int voipd_SO_MEMINFO;
/// The number of values `getsockopt(SO_MEMINFO)` fills in, and the indices of those read.
extern const int voipd_SK_MEMINFO_VARS;
extern const int voipd_SK_MEMINFO_RMEM_ALLOC;
extern const int voipd_SK_MEMINFO_RCVBUF;
extern const int voipd_SK_MEMINFO_DROPS;
extern const int voipd_SK_MEMINFO_WMEM_ALLOC;
extern const unsigned long voipd_SIOCINQ;
extern const unsigned long voipd_SIOCOUTQ;

#endif

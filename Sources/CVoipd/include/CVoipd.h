// CVoipd: what Swift cannot import from Glibc by itself. Includes, constants, CMSG_* and
// one-line wrappers around macros, variadic functions and raw system calls. No logic here.
#ifndef CVOIPD_H
#define CVOIPD_H

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "CVoipdMemory.h"
#include "CVoipdSocketDiag.h"
#include "CVoipdReceiveProgress.h"

/// Credentials of a Unix-socket peer (`struct ucred`, which needs _GNU_SOURCE).
typedef struct {
    int32_t pid;
    uint32_t uid;
    uint32_t gid;
} voipd_peer_credentials;

// Constants that are macros or GNU-only.
extern const int voipd_SOCK_CLOEXEC;
extern const int voipd_SOCK_NONBLOCK;
extern const int voipd_MSG_CMSG_CLOEXEC;
extern const int voipd_MSG_NOSIGNAL;
extern const short voipd_POLLRDHUP;
extern const uint32_t voipd_EPOLLIN;
extern const uint32_t voipd_EPOLLOUT;
extern const uint32_t voipd_EPOLLRDHUP;
extern const uint32_t voipd_EPOLLPRI;
extern const uint32_t voipd_EPOLLERR;
extern const uint32_t voipd_EPOLLHUP;
extern const uint32_t voipd_EPOLLET;
extern const unsigned long voipd_FIONREAD;

// CMSG_* macros.
size_t voipd_cmsg_space(size_t length);
size_t voipd_cmsg_len(size_t length);
struct cmsghdr *voipd_cmsg_firsthdr(struct msghdr *message);
struct cmsghdr *voipd_cmsg_nxthdr(struct msghdr *message, struct cmsghdr *header);
unsigned char *voipd_cmsg_data(struct cmsghdr *header);

// Variadic functions Swift cannot call.
int voipd_ioctl_int(int fd, unsigned long request, int *value);
/// The terminal's size in character cells (`ioctl(TIOCGWINSZ)`).
int voipd_terminal_size(int fd, unsigned short *rows, unsigned short *columns);
int voipd_fcntl_getfl(int fd);
int voipd_fcntl_setfl(int fd, int flags);
int voipd_open(const char *path, int flags, mode_t mode);
int voipd_prctl_set_pdeathsig(int signal);
int voipd_prctl_set_timerslack(unsigned long nanoseconds);
int voipd_sigchld_report_stops(int enabled);
int voipd_signal_ignore(int signal);

// Calls that are GNU-only or have no glibc wrapper on the oldest supported glibc.
int voipd_peer_credentials_get(int fd, voipd_peer_credentials *credentials);
int voipd_peer_pidfd(int fd);
int voipd_pidfd_open(pid_t pid, unsigned int flags);
int voipd_pidfd_send_signal(int pidfd, int signal, unsigned int flags);
/// Sets another process's resource limit (`prlimit64`; glibc declares `prlimit` only under _GNU_SOURCE).
int voipd_prlimit(pid_t pid, int resource, uint64_t soft, uint64_t hard);
int voipd_pidfd_getfd(int pidfd, int targetfd, unsigned int flags);
int voipd_close_range_cloexec(unsigned int first);
int voipd_waitid_pidfd(int pidfd, siginfo_t *info, int options);
int voipd_accept4(int fd, int flags);
int voipd_pipe2(int fds[2], int flags);
int voipd_memfd_create(const char *name, unsigned int flags);
extern const unsigned int voipd_MFD_CLOEXEC;
int voipd_sync_file_range(int fd, off_t offset, off_t count, unsigned int flags);
extern const unsigned int voipd_SYNC_FILE_RANGE_WAIT_BEFORE;
extern const unsigned int voipd_SYNC_FILE_RANGE_WRITE;
extern const unsigned int voipd_SYNC_FILE_RANGE_WAIT_AFTER;

// siginfo_t is a union of structs; these read the fields SIGCHLD and waitid fill in.
pid_t voipd_siginfo_pid(const siginfo_t *info);
int voipd_siginfo_code(const siginfo_t *info);
int voipd_siginfo_status(const siginfo_t *info);

// Signal sets are opaque arrays.
int voipd_sigset_empty(sigset_t *set);
int voipd_sigset_add(sigset_t *set, int signal);

#endif

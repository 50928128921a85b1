#define _GNU_SOURCE
#include "CVoipd.h"
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

const int voipd_SOCK_CLOEXEC = SOCK_CLOEXEC;
const int voipd_SOCK_NONBLOCK = SOCK_NONBLOCK;
const int voipd_MSG_CMSG_CLOEXEC = MSG_CMSG_CLOEXEC;
const int voipd_MSG_NOSIGNAL = MSG_NOSIGNAL;
const short voipd_POLLRDHUP = POLLRDHUP;
const uint32_t voipd_EPOLLIN = EPOLLIN;
const uint32_t voipd_EPOLLOUT = EPOLLOUT;
const uint32_t voipd_EPOLLRDHUP = EPOLLRDHUP;
const uint32_t voipd_EPOLLPRI = EPOLLPRI;
const uint32_t voipd_EPOLLERR = EPOLLERR;
const uint32_t voipd_EPOLLHUP = EPOLLHUP;
const uint32_t voipd_EPOLLET = EPOLLET;
const unsigned long voipd_FIONREAD = FIONREAD;

size_t voipd_cmsg_space(size_t length) { return CMSG_SPACE(length); }
size_t voipd_cmsg_len(size_t length) { return CMSG_LEN(length); }
struct cmsghdr *voipd_cmsg_firsthdr(struct msghdr *message) { return CMSG_FIRSTHDR(message); }
struct cmsghdr *voipd_cmsg_nxthdr(struct msghdr *message, struct cmsghdr *header) { return CMSG_NXTHDR(message, header); }
unsigned char *voipd_cmsg_data(struct cmsghdr *header) { return CMSG_DATA(header); }

int voipd_ioctl_int(int fd, unsigned long request, int *value) { return ioctl(fd, request, value); }
int voipd_terminal_size(int fd, unsigned short *rows, unsigned short *columns)
{
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) < 0) return -1;
    *rows = size.ws_row;
    *columns = size.ws_col;
    return 0;
}
int voipd_fcntl_getfl(int fd) { return fcntl(fd, F_GETFL); }
int voipd_fcntl_setfl(int fd, int flags) { return fcntl(fd, F_SETFL, flags); }
int voipd_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
int voipd_prctl_set_pdeathsig(int signal) { return prctl(PR_SET_PDEATHSIG, signal, 0, 0, 0); }
int voipd_prctl_set_timerslack(unsigned long nanoseconds) { return prctl(PR_SET_TIMERSLACK, nanoseconds, 0, 0, 0); }

int voipd_sigchld_report_stops(int enabled)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    action.sa_flags = enabled ? 0 : SA_NOCLDSTOP;
    return sigaction(SIGCHLD, &action, NULL);
}

int voipd_signal_ignore(int signal)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_IGN;
    return sigaction(signal, &action, NULL);
}

int voipd_peer_credentials_get(int fd, voipd_peer_credentials *credentials)
{
    struct ucred cred;
    socklen_t length = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) < 0) return -1;
    credentials->pid = cred.pid;
    credentials->uid = cred.uid;
    credentials->gid = cred.gid;
    return 0;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

int voipd_peer_pidfd(int fd)
{
    int pidfd = -1;
    socklen_t length = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) < 0) return -1;
    return pidfd;
}

int voipd_pidfd_open(pid_t pid, unsigned int flags) { return (int)syscall(SYS_pidfd_open, pid, flags); }
int voipd_pidfd_send_signal(int pidfd, int signal, unsigned int flags) { return (int)syscall(SYS_pidfd_send_signal, pidfd, signal, NULL, flags); }
int voipd_prlimit(pid_t pid, int resource, uint64_t soft, uint64_t hard)
{
    struct { uint64_t soft, hard; } limit = { soft, hard };
    return (int)syscall(SYS_prlimit64, pid, resource, &limit, NULL);
}
int voipd_pidfd_getfd(int pidfd, int targetfd, unsigned int flags) { return (int)syscall(SYS_pidfd_getfd, pidfd, targetfd, flags); }
int voipd_close_range_cloexec(unsigned int first) { return (int)syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC); }
int voipd_waitid_pidfd(int pidfd, siginfo_t *info, int options) { return waitid((idtype_t)P_PIDFD, (id_t)pidfd, info, options); }
int voipd_accept4(int fd, int flags) { return accept4(fd, NULL, NULL, flags); }
int voipd_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }
int voipd_memfd_create(const char *name, unsigned int flags) { return memfd_create(name, flags); }
const unsigned int voipd_MFD_CLOEXEC = MFD_CLOEXEC;
int voipd_sync_file_range(int fd, off_t offset, off_t count, unsigned int flags) { return sync_file_range(fd, offset, count, flags); }
const unsigned int voipd_SYNC_FILE_RANGE_WAIT_BEFORE = SYNC_FILE_RANGE_WAIT_BEFORE;
const unsigned int voipd_SYNC_FILE_RANGE_WRITE = SYNC_FILE_RANGE_WRITE;
const unsigned int voipd_SYNC_FILE_RANGE_WAIT_AFTER = SYNC_FILE_RANGE_WAIT_AFTER;

pid_t voipd_siginfo_pid(const siginfo_t *info) { return info->si_pid; }
int voipd_siginfo_code(const siginfo_t *info) { return info->si_code; }
int voipd_siginfo_status(const siginfo_t *info) { return info->si_status; }

int voipd_sigset_empty(sigset_t *set) { return sigemptyset(set); }
int voipd_sigset_add(sigset_t *set, int signal) { return sigaddset(set, signal); }

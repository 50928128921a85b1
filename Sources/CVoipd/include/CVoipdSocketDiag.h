// The kernel's socket-diagnostics interface (NETLINK_SOCK_DIAG, inet_diag), sockets' extended
// attributes (system.sockprotoname) and network namespaces: headers and the calls glibc hides
// behind _GNU_SOURCE. No logic here.
#ifndef CVOIPD_SOCKET_DIAG_H
#define CVOIPD_SOCKET_DIAG_H

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/xattr.h>

extern const int voipd_AF_NETLINK;
extern const int voipd_CLONE_NEWNET;
extern const unsigned short voipd_NLM_F_REQUEST;
extern const unsigned short voipd_NLM_F_DUMP;

/// `setns(2)`: moves the calling thread into the namespace `fd` refers to.
int voipd_setns(int fd, int nstype);

#endif

#define _GNU_SOURCE
#include "CVoipd.h"
#include <sched.h>
#include <sys/socket.h>

const int voipd_AF_NETLINK = AF_NETLINK;
const int voipd_CLONE_NEWNET = CLONE_NEWNET;
const unsigned short voipd_NLM_F_REQUEST = NLM_F_REQUEST;
const unsigned short voipd_NLM_F_DUMP = NLM_F_DUMP;

int voipd_setns(int fd, int nstype) { return setns(fd, nstype); }

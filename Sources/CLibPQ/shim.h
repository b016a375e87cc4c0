#ifndef TIDEWAY_CLIBPQ_SHIM_H
#define TIDEWAY_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <poll.h>
#include <sys/epoll.h>
#endif

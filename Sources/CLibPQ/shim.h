#ifndef TIDEWAY_CLIBPQ_SHIM_H
#define TIDEWAY_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#include <poll.h>
#endif

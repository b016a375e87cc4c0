#ifndef TIDEWAY_CZLIB_SHIM_H
#define TIDEWAY_CZLIB_SHIM_H
#include <zlib.h>
#endif

#ifndef TIDEWAY_CFASTCGI_SHIM_H
#define TIDEWAY_CFASTCGI_SHIM_H
#include <fcgiapp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <signal.h>
#include <malloc.h>

/* libfcgi keeps a pointer back to the request: it must live at a stable heap address. */
static inline FCGX_Request *tw_fcgx_request_new(int listen_fd) {
    FCGX_Request *r = (FCGX_Request *)calloc(1, sizeof(FCGX_Request));
    if (r) FCGX_InitRequest(r, listen_fd, 0);
    return r;
}
static inline void tw_fcgx_request_free(FCGX_Request *r) { free(r); }
static inline FCGX_Stream *tw_fcgx_in(FCGX_Request *r) { return r->in; }
static inline FCGX_Stream *tw_fcgx_out(FCGX_Request *r) { return r->out; }
static inline FCGX_ParamArray tw_fcgx_envp(FCGX_Request *r) { return r->envp; }
static inline int tw_fcgx_ipc_fd(FCGX_Request *r) { return r->ipcFd; }
/* Close this request's connection when it is finished, with a plain close(): libfcgi's
   FCGX_Free skips its lingering close (shutdown, wait for the peer's EOF, read) for a
   detached request. FastCGIServer resets `detached` once the request is finished. */
static inline void tw_fcgx_close_when_finished(FCGX_Request *r) { r->keepConnection = 0; r->detached = 1; }
static inline void tw_fcgx_undetach(FCGX_Request *r) { r->detached = 0; }
/* glibc's allocator: at most `n` arenas (MALLOC_ARENA_MAX), and giving freed memory back. */
static inline void tw_malloc_arena_max(int n) { mallopt(M_ARENA_MAX, n); }
static inline void tw_malloc_trim(void) { malloc_trim(0); }
#endif

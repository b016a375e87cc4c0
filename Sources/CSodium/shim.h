#ifndef TIDEWAY_CSODIUM_SHIM_H
#define TIDEWAY_CSODIUM_SHIM_H
#include <sodium.h>
/* Macros are not imported into Swift: expose the ones we use as functions. */
static inline size_t tw_pwhash_strbytes(void) { return crypto_pwhash_STRBYTES; }
static inline unsigned long long tw_pwhash_opslimit(void) { return crypto_pwhash_OPSLIMIT_INTERACTIVE; }
static inline size_t tw_pwhash_memlimit(void) { return crypto_pwhash_MEMLIMIT_INTERACTIVE; }
#endif

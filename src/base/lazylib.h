/* lazylib.h - what callers of the lazily bound libraries (src/base/lazylib.c, src/serve/mhd_lazy.c)
 * share: the binding macros, and what callers may ask beyond the libraries' own functions. */
#ifndef SM_BASE_LAZYLIB_H
#define SM_BASE_LAZYLIB_H

#include <dlfcn.h>

/* Forwarders under a library's own names are hidden, so a host program's copy is not interposed. */
#define SM_HIDDEN __attribute__((visibility("hidden")))

/* Binds var to handle's symbol name, NULL when handle is NULL or lacks it. dlsym returns void *;
 * POSIX guarantees it converts to a function pointer, ISO C does not. */
#define SM_BIND(handle, var, name)                            \
  do {                                                        \
    void *sym_ = (handle) ? dlsym((handle), name) : NULL;     \
    *(void **)(&(var)) = sym_;                                \
  } while (0)

/* 1 when libsnappy could not be loaded (the snappy_* functions then refuse every stream). */
int sm__lazy_snappy_missing(void);

#endif

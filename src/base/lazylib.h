/* lazylib.h - what callers of the lazily bound libraries (src/base/lazylib.c) may ask beyond the
 * libraries' own functions. */
#ifndef SM_BASE_LAZYLIB_H
#define SM_BASE_LAZYLIB_H

/* 1 when libsnappy could not be loaded (the snappy_* functions then refuse every stream). */
int sm_lazy_snappy_missing(void);

#endif

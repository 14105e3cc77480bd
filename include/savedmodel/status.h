/* status.h - the one error type of libsavedmodel.
 *
 * Every fallible function returns `sm_status *`: NULL means success, anything else is an error
 * the caller owns and releases with sm_status_free(). The message names the file, entry, node,
 * signature or alias involved, so it can be shown to a person as it is. */
#ifndef SAVEDMODEL_STATUS_H
#define SAVEDMODEL_STATUS_H

#include <stdarg.h>

#include "savedmodel/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sm_code {
  SM_OK = 0,
  SM_INVALID_ARGUMENT = 1, /* the caller or the input is wrong (bad shape, bad flag, bad text) */
  SM_NOT_FOUND = 2,        /* a file, key, tag-set or signature does not exist */
  SM_DATA_LOSS = 3,        /* a file is damaged: checksum mismatch, truncation, bad magic */
  SM_UNIMPLEMENTED = 4,    /* valid TensorFlow input this library does not handle yet */
  SM_IO = 5,               /* the operating system refused: open, read, write, rename */
  SM_NO_MEMORY = 6,
  SM_ALREADY_EXISTS = 7,
  SM_OUT_OF_RANGE = 8,     /* a size or count past a limit of this library */
  SM_FAILED_PRECONDITION = 9,
  SM_INTERNAL = 10,
  SM_UNAVAILABLE = 11,      /* try again later: a queue is full, the server is shutting down */
  SM_DEADLINE_EXCEEDED = 12, /* a run's deadline passed (sm_run_options) before it finished */
  SM_CANCELLED = 13,         /* a run was cancelled by its caller (sm_run_options.cancel) */
  SM_RESOURCE_EXHAUSTED = 14 /* a shared resource ran out for this request (TF's RESOURCE_EXHAUSTED: a
                              * batch whose every request timed out while queued; "OOM when
                              * allocating" a tensor or a kernel's scratch memory) */
} sm_code;

typedef struct sm_status sm_status;

/* A new error with a printf-style message. Never returns NULL: when memory runs out it returns
 * a preallocated "out of memory" status (which sm_status_free ignores). */
SM_API sm_status *sm_status_new(sm_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), returns_nonnull));
SM_API sm_status *sm_status_newv(sm_code code, const char *fmt, va_list ap) __attribute__((returns_nonnull));

/* Puts context in front of the message and returns the same status: sm_status_prefix(s, "reading
 * %s", path) turns "bad magic" into "reading x/variables.index: bad magic". The ": " separator is
 * added here, so the prefix should not end with one (one that ends in ":" or ": " is not given a
 * second colon; an empty prefix changes nothing, and so does one the message already starts with,
 * followed by ':'). NULL in, NULL out, so
 * `return sm_status_prefix(f(), "...")` is safe. */
SM_API sm_status *sm_status_prefix(sm_status *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

SM_API sm_code sm_status_code(const sm_status *s);       /* SM_OK for NULL */
SM_API const char *sm_status_message(const sm_status *s); /* "" for NULL; owned by the status */
SM_API const char *sm_code_name(sm_code code);            /* "INVALID_ARGUMENT", ... */
SM_API void sm_status_free(sm_status *s);                 /* NULL-safe */

#ifdef __cplusplus
}
#endif
#endif

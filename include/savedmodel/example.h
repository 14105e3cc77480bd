/* example.h - build tf.train.Example protos (what classify/regress signatures and ParseExample
 * read) without TensorFlow.
 *
 *   sm_example *e;  sm_example_new(&e);
 *   float x[] = {1.0f};  sm_example_add_floats(e, "x", x, 1);
 *   uint8_t *bytes; size_t n;  sm_example_serialize(e, &bytes, &n);  ...  free(bytes);
 *
 * Features keep the order they were first added in; adding a name again replaces its value (a
 * Python dict literal behaves the same way). */
#ifndef SAVEDMODEL_EXAMPLE_H
#define SAVEDMODEL_EXAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/api.h"
#include "savedmodel/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sm_example sm_example;

SM_API sm_status *sm_example_new(sm_example **out); /* the caller owns *out */
SM_API void sm_example_free(sm_example *e);         /* NULL-safe */

/* A feature of float_list, int64_list or bytes_list values (copied). Names are proto3 map keys:
 * UTF-8 without NUL bytes, else an error. */
SM_API sm_status *sm_example_add_floats(sm_example *e, const char *name, const float *v, size_t n);
SM_API sm_status *sm_example_add_int64s(sm_example *e, const char *name, const int64_t *v, size_t n);
SM_API sm_status *sm_example_add_bytes(sm_example *e, const char *name, const char *const *v, const size_t *lens,
                                       size_t n);

/* The serialized Example in a malloc'ed buffer the caller frees. */
SM_API sm_status *sm_example_serialize(const sm_example *e, uint8_t **out, size_t *len);

#ifdef __cplusplus
}
#endif
#endif

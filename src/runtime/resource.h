/* resource.h - state that lives across runs of a loaded model: variables and lookup tables.
 *
 * Resources are keyed by (container, shared_name) as TensorFlow keys them; TF1 ref variables
 * (VariableV2 with an empty shared_name) use their node name. One sm_resources belongs to one loaded
 * model; every run of every signature sees the same objects, and they live until the model is
 * freed (and so do the other objects of sm__resources_object). A DT_RESOURCE tensor element is a pointer to one of these objects (sm_variable * or
 * sm_table *), valid as long as the model is.
 *
 * Thread safety: lookups and creation are locked; a variable's value is swapped under its own lock
 * (readers take a reference to the current tensor, so a concurrent assign never frees what a reader
 * uses); a table has a reader-writer lock: a static one is written by its initializer, once; a
 * mutable one (MutableHashTable, ...OfTensors, MutableDenseHashTable) by insert, remove and import,
 * each under the write lock, and every lookup, size and export holds the read lock. */
#ifndef SM_RUNTIME_RESOURCE_H
#define SM_RUNTIME_RESOURCE_H
#include <stddef.h>
#include <stdint.h>

#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

typedef struct sm_resources sm_resources;
typedef struct sm_variable sm_variable;
typedef struct sm_table sm_table;
typedef struct sm_kctx sm_kctx;

sm_status *sm__resources_new(sm_resources **out);
void sm__resources_free(sm_resources *r); /* NULL-safe; frees every variable and table */

/* The variable under (container, name), created (uninitialized, of `dtype`) if absent. A variable
 * that exists with another dtype is an error naming both. */
sm_status *sm__resources_variable(sm_resources *r, const char *container, const char *name, int dtype,
                                 sm_variable **out);
/* Current value with a new reference the caller frees; an uninitialized variable is a
 * FAILED_PRECONDITION error naming it ("... uninitialized value <name>"), as TF says. */
sm_status *sm__variable_read(sm_variable *v, sm_tensor **out);
/* Whether a DT_RESOURCE element (a pointer to an object of sm_resources) is a variable, not a table,
 * queue or other object a TF1 ref handle may also point to. */
int sm__is_variable(const void *obj);
int sm__is_table(const void *obj); /* the same for a lookup table */
/* The object of a DT_RESOURCE scalar handle h (input i, for messages), checked to be a variable /
 * a table: a hostile graph may feed any kind of handle to any op that takes one, and each object
 * is read only as what it is; the error says what the handle holds instead. */
sm_status *sm__handle_variable(const sm_tensor *h, int i, sm_variable **out);
sm_status *sm__handle_table(const sm_tensor *h, int i, sm_table **out);
/* Replace the value; the variable takes over the caller's reference to t. A dtype other than the
 * variable's is an error. */
sm_status *sm__variable_assign(sm_variable *v, sm_tensor *t);
/* A count of the assignments of every variable of the process so far, read with acquire ordering:
 * a value read after the count was seen to be n is still every variable's value while the count
 * is n (an assignment swaps the value first, then counts). For caches of what variables give
 * (nn_fold.c's BatchNorm fold skips its reads while it has not moved). */
uint64_t sm__variables_generation(void);
int sm__variable_is_initialized(sm_variable *v);
int sm__variable_dtype(const sm_variable *v);
const char *sm__variable_name(const sm_variable *v);
/* Lock/unlock for read-modify-write kernels (AssignAdd): between them, read/assign as above. A
 * thread may hold up to 8 variables at once (an optimizer's var and slots), taken in address order
 * so that two kernels locking overlapping sets cannot deadlock. */
void sm__variable_lock(sm_variable *v);
void sm__variable_unlock(sm_variable *v);

/* Hash tables (HashTableV2): key and value dtypes are fixed at creation; `initialized` flips once. */
sm_status *sm__resources_table(sm_resources *r, const char *container, const char *name, int key_dtype,
                              int value_dtype, sm_table **out);
enum { SM_TABLE_STATIC = 0, SM_TABLE_MUTABLE = 1, SM_TABLE_DENSE = 2 };
typedef struct sm_table_spec {
  int key_dtype, value_dtype;
  int kind;            /* SM_TABLE_*: mutable and dense tables start initialized and empty */
  int vrank;           /* value_shape (OfTensors, dense): fully defined */
  const int64_t *vdims;
  /* dense only: the reserved keys (scalars of key_dtype), the starting bucket count and the load
   * factor past which it doubles (TF's bookkeeping: an export has that many rows) */
  const sm_tensor *empty_key, *deleted_key;
  int64_t num_buckets;
  float max_load_factor;
} sm_table_spec;
/* The table under (container, name), created from spec if absent; one that exists with another
 * dtype, kind or value size is an error naming both. */
sm_status *sm__resources_table_spec(sm_resources *r, const char *container, const char *name,
                                    const sm_table_spec *spec, sm_table **out);
/* A table of no container (an Anonymous* op's): its handle owns it; sm__htable_self is the word
 * holding the table's address, which a handle tensor wraps (kernel.h: sm_tensor_wrap). */
sm_status *sm__htable_new(const char *name, const sm_table_spec *spec, sm_table **out);
void sm__htable_free(sm_table *t); /* NULL-safe */
void *sm__htable_self(sm_table *t);
int sm__table_key_dtype(const sm_table *t);
int sm__table_value_dtype(const sm_table *t);
int sm__table_kind(const sm_table *t);
int sm__table_value_shape(const sm_table *t, const int64_t **dims); /* the rank; dims into t */
const char *sm__table_name(const sm_table *t);
int sm__table_is_initialized(const sm_table *t);
/* Insert keys[i] -> values[i] (1-D tensors of equal length, the table's dtypes) and mark it
 * initialized. A second initialization is ignored, as TF's initializers are idempotent once run. */
sm_status *sm__table_init(sm_table *t, const sm_tensor *keys, const sm_tensor *values);
/* out[i] = table[keys[i]] or default_value (vn elements per key: the value shape's); out must
 * have keys' element count times vn, the value dtype. */
sm_status *sm__table_find(const sm_table *t, const sm_tensor *keys, const sm_tensor *default_value, sm_tensor *out);
int64_t sm__table_size(const sm_table *t);
/* Mutable tables. values' shape is keys' shape followed by the value shape. Insert overwrites;
 * remove ignores absent keys; import replaces the whole contents (a dense table's import takes
 * its saved bucket arrays: the empty and deleted keys' rows are skipped). What entries hold is
 * charged to c's run (its memory budget: SM_RESOURCE_EXHAUSTED past it); c may be NULL. A dense
 * table refuses its empty and deleted keys (TF's messages). */
sm_status *sm__table_insert(sm_table *t, const sm_kctx *c, const sm_tensor *keys, const sm_tensor *values);
sm_status *sm__table_remove(sm_table *t, const sm_kctx *c, const sm_tensor *keys);
sm_status *sm__table_import(sm_table *t, const sm_kctx *c, const sm_tensor *keys, const sm_tensor *values);
/* New tensors: the keys (1-D) and values (keys' length followed by the value shape), in slot
 * order; a dense table's free buckets follow as rows of its empty key and zero values. */
sm_status *sm__table_export(sm_table *t, sm_tensor **keys, sm_tensor **values);

/* Other objects kernels keep across runs (TF1 queues, staging areas, barriers, accumulators,
 * mutexes: src/ops/queue*.c), keyed by (kind, container, name) where kind is the caller's small tag
 * (SM_RES_*, < 2^20). The first caller makes it with make(arg, display_name, &obj) under the
 * registry's lock (so exactly one is made; make must not call back into r); later ones get the same
 * obj. destroy(obj) runs when r is freed. A failed make leaves nothing behind. */
enum { SM_RES_QUEUE = 1, SM_RES_STAGE = 2, SM_RES_BARRIER = 3, SM_RES_ACCUM = 4, SM_RES_MUTEX = 5, SM_RES_READER = 6,
       SM_RES_TEMPVAR = 7, SM_RES_UNBATCH = 8, SM_RES_UNBATCH_GRAD = 9 };
enum { SM_RES_SPARSE_MAP = 16 }; /* AddSparseToTensorsMap's SparseTensorsMap (src/ops/sparse_ser.c) */
typedef sm_status *(*sm_resource_make_fn)(void *arg, const char *display_name, void **obj);
sm_status *sm__resources_object(sm_resources *r, int kind, const char *container, const char *name,
                                sm_resource_make_fn make, void *arg, void (*destroy)(void *obj), void **out);

#endif

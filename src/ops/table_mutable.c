/* table_mutable.c - what changes a mutable table (MutableHashTable, ...OfTensors,
 * MutableDenseHashTable: their creation is lookup.c's) - LookupTableInsertV2, LookupTableRemoveV2,
 * LookupTableExportV2 and the V1 ref forms - and two other small stateful kernels: VariableShape
 * (the shape of a resource variable's value) and TF1's stack (StackV2, StackPushV2, StackPopV2,
 * StackCloseV2 and the V1 forms).
 *
 * Tables lock themselves (resource.h: one reader-writer lock per table), so a signature that
 * inserts may run on many threads at once; what inserts hold is charged to the run's memory
 * budget. A stack is an object its handle tensor owns (as tensor_array.c's arrays): the handle
 * wraps its address and frees it with the last reference; its elements are held by reference,
 * bounded by sm__seq_max_elements and charged to the run's budget; a mutex guards it. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel.h"

static const char *dname(int dtype) {
  const char *n = sm_dtype_name(dtype);
  return n ? n : "(unknown dtype)";
}

static sm_status *input_table(sm_kctx *ctx, int i, sm_table **out) {
  return sm__handle_table(sm__kctx_input(ctx, i), i, out);
}

static sm_status *mutable_table(sm_kctx *ctx, sm_table **out) {
  sm_status *s = input_table(ctx, 0, out);
  if (!s && sm__table_kind(*out) == SM_TABLE_STATIC)
    s = sm_status_new(SM_UNIMPLEMENTED, "table '%s' is a static HashTable: it is not mutable", sm__table_name(*out));
  return s;
}

/* ---- LookupTableInsertV2 / RemoveV2 / ExportV2 ------------------------------------------- */

static sm_status *insert_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_table *t;
  sm_status *s = mutable_table(ctx, &t);
  if (!s) s = sm__table_insert(t, ctx, sm__kctx_input(ctx, 1), sm__kctx_input(ctx, 2));
  return s;
}

static sm_status *remove_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  sm_table *t;
  sm_status *s = mutable_table(ctx, &t);
  if (!s) s = sm__table_remove(t, ctx, sm__kctx_input(ctx, 1));
  return s;
}

typedef struct {
  int tkeys, tvalues;
} export_state;

static sm_status *export_prepare(const sm_node *node, void **state) {
  export_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_type(node, "Tkeys", &st->tkeys);
  if (!s) s = sm__node_attr_type(node, "Tvalues", &st->tvalues);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *export_compute(const void *state, sm_kctx *ctx) {
  const export_state *es = state;
  sm_table *t;
  sm_status *s = input_table(ctx, 0, &t);
  if (s) return s;
  if (sm__table_key_dtype(t) != es->tkeys || sm__table_value_dtype(t) != es->tvalues)
    return sm_status_new(SM_INVALID_ARGUMENT, "table '%s' maps %s to %s; the export asks for %s to %s",
                         sm__table_name(t), dname(sm__table_key_dtype(t)), dname(sm__table_value_dtype(t)),
                         dname(es->tkeys), dname(es->tvalues));
  sm_tensor *k, *v;
  if ((s = sm__table_export(t, &k, &v))) return s;
  /* the output slots' charge: the run's budget sees the export as any output */
  s = sm__kctx_charge_check(ctx, sm_tensor_nbytes(k) + sm_tensor_nbytes(v), "a table's export");
  if (s) {
    sm_tensor_free(k);
    sm_tensor_free(v);
    return s;
  }
  sm__kctx_set_output(ctx, 0, k);
  sm__kctx_set_output(ctx, 1, v);
  return NULL;
}

/* ---- VariableShape ---------------------------------------------------------------------------- */

static sm_status *out_type_prepare(const sm_node *node, void **state) {
  int *dt = malloc(sizeof *dt);
  if (!dt) return sm_status_new(SM_NO_MEMORY, "out of memory");
  *dt = SM_INT32;
  sm_status *s = sm__node_attr(node, "out_type") ? sm__node_attr_type(node, "out_type", dt) : NULL;
  if (!s && *dt != SM_INT32 && *dt != SM_INT64)
    s = sm_status_new(SM_INVALID_ARGUMENT, "VariableShape: out_type must be int32 or int64, got %s", dname(*dt));
  if (s) {
    free(dt);
    return s;
  }
  *state = dt;
  return NULL;
}

static sm_status *variable_shape_compute(const void *state, sm_kctx *ctx) {
  int dt = *(const int *)state;
  sm_variable *var;
  sm_status *s = sm__handle_variable(sm__kctx_input(ctx, 0), 0, &var);
  if (s) return sm_status_prefix(s, "VariableShape");
  sm_tensor *val;
  s = sm__variable_read(var, &val);
  if (s) return s;
  int r = sm_tensor_rank(val);
  int64_t n = r;
  sm_tensor *out;
  s = sm__kctx_alloc_output(ctx, 0, dt, 1, &n, &out);
  for (int i = 0; !s && i < r; i++) {
    int64_t d = sm_tensor_dims(val)[i];
    if (dt == SM_INT32 && d > INT32_MAX) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "VariableShape: dim %d (%lld) does not fit int32", i, (long long)d);
      break;
    }
    if (dt == SM_INT32)
      ((int32_t *)sm_tensor_data(out))[i] = (int32_t)d;
    else
      ((int64_t *)sm_tensor_data(out))[i] = d;
  }
  sm_tensor_free(val);
  return s;
}

/* ---- StackV2 / StackPushV2 / StackPopV2 / StackCloseV2 -------------------------------------- */

typedef struct stack {
  void *self; /* first: the handle tensor's one element points here */
  pthread_mutex_t mu;
  int dtype, closed;
  int64_t max; /* < 0: unbounded */
  sm_tensor **items;
  int64_t n, cap;
  sm_mem_account acct;
  char name[96];
} stack;

static void stack_free(void *p) {
  stack *k = p;
  for (int64_t i = 0; i < k->n; i++) sm_tensor_free(k->items[i]);
  free(k->items);
  sm__mem_close(&k->acct);
  pthread_mutex_destroy(&k->mu);
  free(k);
}

typedef struct {
  int dtype;
  char name[64];
} stack_state;

static sm_status *stack_prepare(const sm_node *node, void **state) {
  stack_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  const char *attr = sm__node_attr(node, "elem_type") ? "elem_type" : "T";
  sm_status *s = sm__node_attr(node, attr) ? sm__node_attr_type(node, attr, &st->dtype) : NULL;
  if (!s && sm__node_attr(node, "stack_name")) {
    const char *nm;
    size_t len;
    s = sm__node_attr_string(node, "stack_name", &nm, &len);
    if (!s) snprintf(st->name, sizeof st->name, "%.*s", (int)(len > 60 ? 60 : len), nm);
  }
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static sm_status *stack_new_compute(const void *state, sm_kctx *ctx) {
  const stack_state *st = state;
  const sm_tensor *ms = sm__kctx_input(ctx, 0);
  int64_t max = -1;
  if (ms) {
    if (sm_tensor_dtype(ms) != SM_INT32 || sm_tensor_num_elements(ms) != 1)
      return sm_status_new(SM_INVALID_ARGUMENT, "max_size must be an int32 scalar");
    max = *(const int32_t *)sm_tensor_data(ms);
  }
  stack *k = calloc(1, sizeof *k);
  if (!k) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a stack");
  pthread_mutex_init(&k->mu, NULL);
  k->self = k;
  k->dtype = st->dtype;
  k->max = max;
  /* TF names a stack by its stack_name and a process-wide count; the count is this object's */
  snprintf(k->name, sizeof k->name, "%s", st->name);
  sm_tensor *h;
  sm_status *s = sm_tensor_wrap(SM_RESOURCE, 0, NULL, &k->self, sizeof k->self, stack_free, k, &h);
  if (s) {
    stack_free(k);
    return s;
  }
  sm__kctx_set_output(ctx, 0, h);
  return NULL;
}

static sm_status *input_stack(sm_kctx *ctx, stack **out) {
  const sm_tensor *h = sm__kctx_input(ctx, 0);
  void *p = h && sm_tensor_dtype(h) == SM_RESOURCE && sm_tensor_num_elements(h) == 1 && sm_tensor_data(h)
                ? ((void *const *)sm_tensor_data(h))[0]
                : NULL;
  if (!p) return sm_status_new(SM_INVALID_ARGUMENT, "input 0 is not a stack handle");
  *out = p;
  return NULL;
}

static sm_status *push_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  stack *k;
  sm_status *s = input_stack(ctx, &k);
  if (s) return s;
  const sm_tensor *e = sm__kctx_input(ctx, 1);
  if (sm_tensor_dtype(e) != k->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "Must have type %s but got %s", dname(k->dtype), dname(sm_tensor_dtype(e)));
  pthread_mutex_lock(&k->mu);
  if (k->closed)
    s = sm_status_new(SM_FAILED_PRECONDITION, "Stack %s has already been closed.", k->name);
  else if (k->max >= 0 && k->n >= k->max)
    s = sm_status_new(SM_INVALID_ARGUMENT, "Stack[%s] overflowed its max_size (%lld)", k->name, (long long)k->max);
  else if (k->n >= sm__seq_max_elements)
    s = sm_status_new(SM_RESOURCE_EXHAUSTED, "Stack[%s]: %lld elements are more than the limit of %lld", k->name,
                      (long long)k->n + 1, (long long)sm__seq_max_elements);
  if (!s && k->n == k->cap) {
    int64_t nc = k->cap ? k->cap * 2 : 8;
    s = sm__kctx_hold(ctx, &k->acct, (size_t)(nc - k->cap) * sizeof *k->items, "a stack's elements");
    sm_tensor **ni = s ? NULL : realloc(k->items, (size_t)nc * sizeof *ni);
    if (!s && !ni) {
      sm__mem_give(&k->acct, (size_t)(nc - k->cap) * sizeof *k->items);
      s = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when growing a stack to %lld elements", (long long)nc);
    }
    if (!s) {
      k->items = ni;
      k->cap = nc;
    }
  }
  if (!s) s = sm__kctx_hold_tensor(ctx, &k->acct, e, "a stack's elements");
  if (!s) k->items[k->n++] = sm_tensor_ref((sm_tensor *)e);
  pthread_mutex_unlock(&k->mu);
  if (!s) sm__kctx_forward(ctx, 1, 0);
  return s;
}

static sm_status *pop_compute(const void *state, sm_kctx *ctx) {
  const stack_state *st = state;
  stack *k;
  sm_status *s = input_stack(ctx, &k);
  if (s) return s;
  if (st->dtype != k->dtype)
    return sm_status_new(SM_INVALID_ARGUMENT, "Must have type %s but got %s", dname(k->dtype), dname(st->dtype));
  sm_tensor *e = NULL;
  pthread_mutex_lock(&k->mu);
  if (k->closed)
    s = sm_status_new(SM_FAILED_PRECONDITION, "Stack %s has already been closed.", k->name);
  else if (!k->n)
    s = sm_status_new(SM_OUT_OF_RANGE, "Stack[%s] is empty when calling Pop().", k->name);
  else
    e = k->items[--k->n];
  if (e) sm__mem_give_tensor(&k->acct, e);
  pthread_mutex_unlock(&k->mu);
  if (e) sm__kctx_set_output(ctx, 0, e);
  return s;
}

static sm_status *close_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  stack *k;
  sm_status *s = input_stack(ctx, &k);
  if (s) return s;
  pthread_mutex_lock(&k->mu);
  k->closed = 1;
  for (int64_t i = 0; i < k->n; i++) {
    sm__mem_give_tensor(&k->acct, k->items[i]);
    sm_tensor_free(k->items[i]);
  }
  k->n = 0;
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

const sm_kernel sm_kernels_table_mutable[] = {
    {"LookupTableInsertV2", NULL, insert_compute, NULL, 0},
    {"LookupTableInsert", NULL, insert_compute, NULL, 0},
    {"LookupTableRemoveV2", NULL, remove_compute, NULL, 0},
    {"LookupTableExportV2", export_prepare, export_compute, free, 0},
    {"LookupTableExport", export_prepare, export_compute, free, 0},
    {"VariableShape", out_type_prepare, variable_shape_compute, free, 0},
    {"StackV2", stack_prepare, stack_new_compute, free, 0},
    {"StackPushV2", stack_prepare, push_compute, free, 0},
    {"StackPopV2", stack_prepare, pop_compute, free, 0},
    {"StackCloseV2", stack_prepare, close_compute, free, 0},
    {0},
};

/* executor.c - running a plan: the kernel context (struct sm_kctx and every sm_kctx_* function of
 * kernel.h), sm__plan_run, and sub-plans run from inside a kernel (sm__kctx_run_plan).
 *
 * A run owns only its array of slot values: the feeds go into their slots, each step reads its
 * inputs from slots (reading a TF1 ref variable's value where the graph consumes a ref as a value),
 * writes its outputs to its own, and releases the slots it was the last reader of; the fetch slots
 * are handed out at the end. Deadline and cancel (sm_run_options) are checked before every step,
 * sub-plans' steps included, and by looping kernels once per iteration (sm__kctx_check_stop).
 * A run (and a plan's preload) runs in TF's floating-point mode, denormals flushed
 * (base/fpmode.h), and puts the caller's own mode back after.
 *
 * The memory budget (sm_run_options.max_run_bytes): a run (with its sub-plans) shares one atomic
 * count of the bytes it holds. An output made by sm__kctx_alloc_output* is charged before it is
 * allocated and stays charged while its slot holds it (released with the slot, or when the run ends
 * and hands it out); scratch is charged until it is freed. A charge that would pass the budget is
 * refused, so nothing is allocated. What a kernel's object keeps past its step (a TensorList's or
 * TensorArray's elements) is charged to the object's account (sm__kctx_hold) until it lets go. The
 * budget lives on the heap (refcounted) so those accounts may outlive the run. Nothing here takes a
 * lock. A plan built with SM_STEP_PROFILE set has a profile (step_profile.h): each step's kernel
 * time and each successful run's time go into it. */
#include "runtime/executor.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/fpmode.h"
#include "base/tensor_internal.h"
#include "runtime/device.h"
#include "runtime/plan.h"
#include "runtime/step_profile.h"
#include "runtime/verify.h"

/* A run's memory budget, shared by its sub-plans (threads of a map_fn too: used is atomic), on the
 * heap with a reference count: the run holds one, and so does every kernel-object account
 * (sm_mem_account) that holds bytes of it, so an object that outlives the run can still give back. */
typedef struct sm_run_mem {
  size_t cap;
  size_t used;
  int refs; /* atomic */
} run_mem;

/* A run's device context (device.h), opened at its first device step or copy; sub-plans share it. */
typedef struct run_dev {
  const sm_device *dev;
  void *run;
  int open;
} run_dev;

int64_t sm__seq_max_elements = SM_MAX_SEQ_ELEMENTS;

struct sm_kctx {
  const sm_exec_env *env;
  const sm_run_options *ro; /* NULL: none */
  run_mem *mem;             /* NULL: no budget */
  size_t *charge;           /* with mem: the bytes charged for each output of this step */
  int depth;                /* sub-plan nesting of the run this step belongs to (0: top) */
  const sm_step *st;
  const sm_node *node;
  const sm_tensor **in;
  sm_tensor **out;
  void **scratch; /* blocks sm__kctx_scratch handed out during this compute, released after it */
  int nscratch, scratch_cap;
  int step, nsteps; /* this step's index in its plan, for sm__kctx_check_stop's message */
  run_dev *rd;      /* the run's device context (NULL: a CPU-only run) */
};

static const char *dtname(int dt) {
  const char *n = sm_dtype_name(dt);
  return n ? n : "DT_INVALID";
}

/* ---- the memory budget ----------------------------------------------------------------------- */
/* Takes `bytes` from the budget, or refuses (nothing taken) naming `what` and the budget. */
static sm_status *mem_take(run_mem *m, size_t bytes, const char *what) {
  if (!m || !bytes) return NULL;
  size_t used = __atomic_load_n(&m->used, __ATOMIC_RELAXED);
  for (;;) {
    if (bytes > m->cap || used > m->cap - bytes)
      return sm_status_new(SM_RESOURCE_EXHAUSTED,
                           "%s of %zu bytes would pass the run's memory budget (max_run_bytes %zu; %zu bytes in use)",
                           what, bytes, m->cap, used);
    if (__atomic_compare_exchange_n(&m->used, &used, used + bytes, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return NULL;
  }
}

static void mem_give(run_mem *m, size_t bytes) {
  if (m && bytes) __atomic_sub_fetch(&m->used, bytes, __ATOMIC_RELAXED);
}

sm_status *sm__kctx_charge_check(const sm_kctx *c, size_t bytes, const char *what) {
  run_mem *m = c->mem;
  if (!m) return NULL;
  size_t used = __atomic_load_n(&m->used, __ATOMIC_RELAXED);
  if (bytes > m->cap || used > m->cap - bytes)
    return sm_status_new(SM_RESOURCE_EXHAUSTED,
                         "%s of %zu bytes would pass the run's memory budget (max_run_bytes %zu; %zu bytes in use)",
                         what ? what : "an allocation", bytes, m->cap, used);
  return NULL;
}

static void mem_unref(run_mem *m) {
  if (m && __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) == 0) sm__free(m);
}

void sm__mem_give(sm_mem_account *a, size_t bytes) {
  if (!a || !a->mem) return;
  if (bytes > a->held) bytes = a->held;
  mem_give(a->mem, bytes);
  a->held -= bytes;
}

void sm__mem_close(sm_mem_account *a) {
  if (!a || !a->mem) return;
  mem_give(a->mem, a->held);
  mem_unref(a->mem);
  a->mem = NULL;
  a->held = 0;
}

sm_status *sm__kctx_hold(const sm_kctx *c, sm_mem_account *a, size_t bytes, const char *what) {
  if (a->mem != c->mem) { /* made in another run (or none): its holdings move to this one */
    size_t held = a->held;
    sm__mem_close(a);
    if (!c->mem) return NULL;
    sm_status *s = mem_take(c->mem, held, what);
    if (s) return s;
    __atomic_add_fetch(&c->mem->refs, 1, __ATOMIC_RELAXED);
    a->mem = c->mem;
    a->held = held;
  }
  if (!a->mem) return NULL;
  sm_status *s = mem_take(a->mem, bytes, what);
  if (!s) a->held += bytes;
  return s;
}

static size_t tensor_charge(const sm_tensor *t) {
  size_t bytes = 0;
  if (t) sm_status_free(sm__tensor_alloc_bytes(sm_tensor_dtype(t), sm_tensor_rank(t), sm_tensor_dims(t), &bytes));
  return bytes;
}

sm_status *sm__kctx_hold_tensor(const sm_kctx *c, sm_mem_account *a, const sm_tensor *t, const char *what) {
  return sm__kctx_hold(c, a, c->mem ? tensor_charge(t) : 0, what);
}

void sm__mem_give_tensor(sm_mem_account *a, const sm_tensor *t) {
  if (a && a->mem && t) sm__mem_give(a, tensor_charge(t));
}

/* Charges output i's new tensor (dtype, shape) before it is allocated, releasing what the output
 * held before. */
static sm_status *charge_output(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims) {
  if (!c->mem) return NULL;
  size_t bytes;
  sm_status *s = sm__tensor_alloc_bytes(dtype, rank, dims, &bytes);
  if (s) return s;
  if ((s = mem_take(c->mem, bytes, "a tensor"))) return s;
  mem_give(c->mem, c->charge[i]);
  c->charge[i] = bytes;
  return NULL;
}

/* ---- kernel context -------------------------------------------------------------------------- */
const sm_node *sm__kctx_node(const sm_kctx *c) { return c->node; }
int sm__kctx_num_inputs(const sm_kctx *c) { return c->st->nin; }
const sm_tensor *sm__kctx_input(const sm_kctx *c, int i) { return i >= 0 && i < c->st->nin ? c->in[i] : NULL; }
int sm__kctx_num_outputs(const sm_kctx *c) { return c->st->nout; }

sm_status *sm__kctx_alloc_output(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  *out = NULL;
  if (i < 0 || i >= c->st->nout)
    return sm_status_new(SM_INTERNAL, "node '%s' (%s): output %d out of range (it has %d)", sm__node_name(c->node),
                         sm__node_op(c->node), i, c->st->nout);
  sm_tensor *t;
  sm_status *s = charge_output(c, i, dtype, rank, dims);
  if (!s && (s = sm_tensor_new(dtype, rank, dims, &t)) && c->mem) mem_give(c->mem, c->charge[i]), c->charge[i] = 0;
  if (s) return sm_status_prefix(s, "node '%s' (%s): output %d", sm__node_name(c->node), sm__node_op(c->node), i);
  sm_tensor_free(c->out[i]);
  c->out[i] = t;
  *out = t;
  return NULL;
}

void sm__kctx_set_output(sm_kctx *c, int i, sm_tensor *t) {
  if (i < 0 || i >= c->st->nout) {
    sm_tensor_free(t);
    return;
  }
  if (c->mem && c->out[i] != t) { /* what the output held goes: so does its charge */
    mem_give(c->mem, c->charge[i]);
    c->charge[i] = 0;
  }
  sm_tensor_free(c->out[i]);
  c->out[i] = t;
}

void sm__kctx_forward(sm_kctx *c, int in, int out) {
  if (in < 0 || in >= c->st->nin || !c->in[in]) return;
  sm__kctx_set_output(c, out, sm_tensor_ref((sm_tensor *)c->in[in]));
}

sm_status *sm__kctx_alloc_output_uninit(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out) {
  *out = NULL;
  if (i < 0 || i >= c->st->nout)
    return sm_status_new(SM_INTERNAL, "node '%s' (%s): output %d out of range (it has %d)", sm__node_name(c->node),
                         sm__node_op(c->node), i, c->st->nout);
  sm_tensor *t;
  sm_status *s = charge_output(c, i, dtype, rank, dims);
  if (!s && (s = sm__tensor_new_uninit(dtype, rank, dims, &t)) && c->mem) mem_give(c->mem, c->charge[i]), c->charge[i] = 0;
  if (s) return sm_status_prefix(s, "node '%s' (%s): output %d", sm__node_name(c->node), sm__node_op(c->node), i);
  sm_tensor_free(c->out[i]);
  c->out[i] = t;
  *out = t;
  return NULL;
}

sm_tensor *sm__kctx_reuse_input(sm_kctx *c, int in, int out, int dtype, int rank, const int64_t *dims) {
  if (in < 0 || in >= c->st->nin || out < 0 || out >= c->st->nout || !c->st->in_last || !c->st->in_last[in])
    return NULL;
  sm_tensor *t = (sm_tensor *)c->in[in];
  /* the run's slot holds one reference; any other (a feed's caller, a Const's state, a variable)
   * makes it shared */
  if (!t || sm_tensor_is_shared(t) || sm_tensor_dtype(t) != dtype || sm_tensor_rank(t) != rank) return NULL;
  if (rank && memcmp(sm_tensor_dims(t), dims, (size_t)rank * sizeof *dims)) return NULL;
  sm__kctx_set_output(c, out, sm_tensor_ref(t));
  return t;
}

/* Room for one more scratch block in the context's list. */
static sm_status *scratch_slot(sm_kctx *c, size_t bytes) {
  if (c->nscratch < c->scratch_cap) return NULL;
  int ncap = c->scratch_cap ? c->scratch_cap * 2 : 4;
  void **nv = sm__realloc(c->scratch, (size_t)ncap * sizeof *nv);
  if (!nv) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes of scratch", bytes);
  c->scratch = nv;
  c->scratch_cap = ncap;
  return NULL;
}

void *sm__kctx_scratch(sm_kctx *c, size_t bytes, sm_status **st) {
  if ((*st = scratch_slot(c, bytes))) return NULL;
  if ((*st = mem_take(c->mem, bytes, "scratch"))) return NULL;
  void *p = sm__alloc(bytes);
  if (!p) {
    mem_give(c->mem, bytes);
    *st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes of scratch", bytes);
    return NULL;
  }
  c->scratch[c->nscratch++] = p;
  return p;
}

void *sm__kctx_scratch_realloc(sm_kctx *c, void *p, size_t bytes, sm_status **st) {
  *st = NULL;
  if (!p) return sm__kctx_scratch(c, bytes, st);
  int i = c->nscratch - 1;
  while (i >= 0 && c->scratch[i] != p) i--;
  if (i < 0) {
    *st = sm_status_new(SM_INTERNAL, "scratch block %p is not this compute's", p);
    return NULL;
  }
  size_t old = sm__alloc_size(p);
  if (bytes > old && (*st = mem_take(c->mem, bytes - old, "scratch"))) return NULL;
  void *np = sm__realloc(p, bytes);
  if (!np) {
    if (bytes > old) mem_give(c->mem, bytes - old);
    *st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes of scratch", bytes);
    return NULL;
  }
  if (bytes < old) mem_give(c->mem, old - bytes);
  c->scratch[i] = np;
  return np;
}

void sm__kctx_scratch_free(sm_kctx *c, void *p) {
  if (!p) return;
  for (int i = c->nscratch - 1; i >= 0; i--)
    if (c->scratch[i] == p) {
      c->scratch[i] = c->scratch[--c->nscratch];
      mem_give(c->mem, sm__alloc_size(p));
      sm__free(p);
      return;
    }
}

/* Releases what the kernel left of its scratch (after each compute). */
static void kctx_scratch_release(sm_kctx *c) {
  for (int i = 0; i < c->nscratch; i++) {
    mem_give(c->mem, sm__alloc_size(c->scratch[i]));
    sm__free(c->scratch[i]);
  }
  sm__free(c->scratch);
  c->scratch = NULL;
  c->nscratch = c->scratch_cap = 0;
}

sm_resources *sm__kctx_resources(sm_kctx *c) { return c->env->res; }
void *sm__kctx_device(sm_kctx *c) { return c->rd && c->rd->dev ? c->rd->dev->ctx : NULL; }
void *sm__kctx_device_run(sm_kctx *c) { return c->rd ? c->rd->run : NULL; }
sm_threadpool *sm__kctx_pool(sm_kctx *c) { return c->env->pool; }
const char *sm__kctx_export_dir(const sm_kctx *c) { return c->env->export_dir ? c->env->export_dir : ""; }

sm_status *sm__kctx_open_file(const sm_kctx *c, const char *path, uint64_t max_bytes, sm_file_map *out) {
  memset(out, 0, sizeof *out);
  const char *dir = sm__kctx_export_dir(c);
  if (!*path) return sm_status_new(SM_INVALID_ARGUMENT, "empty file name");
  if (c->env->allow_external_files || !*dir) return sm__file_map_open_max(path, max_bytes, out);
  char *real;
  sm_status *s = sm__verify_path_confined(dir, path, &real);
  if (s) return s;
  s = sm__file_map_open_max(real, max_bytes, out);
  free(real);
  /* the message names the path the graph gave, not the resolved one */
  return s ? sm_status_prefix(s, "%s", path) : NULL;
}

/* ---- running --------------------------------------------------------------------------------- */
/* The value of a ref-variable handle tensor (a DT_RESOURCE scalar holding an sm_variable *). */
static sm_status *read_ref(const sm_tensor *h, sm_tensor **out) {
  *out = NULL;
  if (sm_tensor_num_elements(h) != 1 || !sm_tensor_data(h))
    return sm_status_new(SM_INTERNAL, "a ref input is not a variable handle");
  sm_variable *v = *(sm_variable **)sm_tensor_data(h);
  if (!v) return sm_status_new(SM_INTERNAL, "a ref input holds a null variable");
  if (!sm__is_variable(v)) { /* a TF1 ref handle of a queue, table, ...: the handle itself */
    *out = sm_tensor_ref((sm_tensor *)h);
    return NULL;
  }
  return sm__variable_read(v, out);
}

int64_t sm_monotonic_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* sm_run_options, checked before step i: a deadline passed or a cancel flag set stops the run. */
static sm_status *run_stop(const sm_run_options *ro, int i, int nsteps, const sm_node *nd) {
  if (ro->cancel && __atomic_load_n(ro->cancel, __ATOMIC_RELAXED))
    return sm_status_new(SM_CANCELLED, "run cancelled before step %d of %d (node '%s', %s)", i, nsteps,
                         sm__node_name(nd), sm__node_op(nd));
  if (ro->deadline_us > 0 && sm_monotonic_us() >= ro->deadline_us)
    return sm_status_new(SM_DEADLINE_EXCEEDED, "deadline exceeded before step %d of %d (node '%s', %s)", i, nsteps,
                         sm__node_name(nd), sm__node_op(nd));
  return NULL;
}

sm_status *sm__kctx_check_stop(const sm_kctx *c) {
  const sm_run_options *ro = c->ro;
  if (ro && sm__stop_probe) sm__stop_probe();
  if (ro && ro->cancel && __atomic_load_n(ro->cancel, __ATOMIC_RELAXED))
    return sm_status_new(SM_CANCELLED, "run cancelled during step %d of %d", c->step, c->nsteps);
  if (ro && ro->deadline_us > 0 && sm_monotonic_us() >= ro->deadline_us)
    return sm_status_new(SM_DEADLINE_EXCEEDED, "deadline exceeded during step %d of %d", c->step, c->nsteps);
  return NULL;
}

/* TF1 conditionals (plan.h: has_dead): dead[slot] for values, dead[nslots + i] for step i. Whether
 * step i is dead: a Merge when every data input is, a ControlTrigger never, any other node when a
 * data input or a node it has a control edge from is (TensorFlow's propagator_state.cc). */
static int step_is_dead(const sm_plan *p, const sm_step *sp, const unsigned char *dead) {
  if (sp->cf == SM_CF_TRIGGER) return 0;
  if (sp->cf == SM_CF_MERGE) {
    for (int j = 0; j < sp->nin; j++)
      if (!dead[sp->in_slot[j]]) return 0;
    return sp->nin > 0;
  }
  for (int j = 0; j < sp->nin; j++)
    if (dead[sp->in_slot[j]]) return 1;
  for (int k = 0; k < sp->nctl; k++)
    if (dead[p->nslots + sp->ctl_step[k]]) return 1;
  return 0;
}

/* ---- placement: copies between host and device (device.h) -------------------------------------- */
static sm_status *dev_open(const sm_plan *p, run_dev *rd) {
  if (rd->open) return NULL;
  rd->dev = p->dev;
  sm_status *st = rd->dev->run_begin(rd->dev->ctx, &rd->run);
  if (st) return sm_status_prefix(st, "%s device", rd->dev->name);
  rd->open = 1;
  return NULL;
}

/* Copy slot sl (plan.h: xsrc) from its source: an upload (cached for weights) or a download. */
static sm_status *make_copy(const sm_plan *p, int sl, sm_tensor **vals, run_dev *rd) {
  sm_tensor *src = vals[p->xsrc[sl]];
  if (!src) return sm_status_new(SM_INTERNAL, "copy slot %d: its source has no value", sl);
  sm_status *st = dev_open(p, rd);
  if (st) return st;
  const sm_device *d = rd->dev;
  if (!p->xdir[sl]) return d->download(d->ctx, rd->run, src, &vals[sl]);
  if (!p->xcache[sl]) return d->upload(d->ctx, rd->run, src, &vals[sl]);
  pthread_mutex_lock(p->cache_mu);
  if (p->cache_host[sl] != src) {
    sm_tensor *up;
    if (!(st = d->upload(d->ctx, rd->run, src, &up))) {
      sm_tensor_free(p->cache_host[sl]);
      sm_tensor_free(p->cache_dev[sl]);
      p->cache_host[sl] = sm_tensor_ref(src); /* held: the same pointer is the same value */
      p->cache_dev[sl] = up;
    }
  }
  if (!st) vals[sl] = sm_tensor_ref(p->cache_dev[sl]);
  pthread_mutex_unlock(p->cache_mu);
  return st;
}

static sm_status *exec(const sm_plan *p, const sm_exec_env *env, sm_tensor *const *feeds, sm_tensor **outputs,
                       const sm_run_options *ro, int depth, run_mem *mem, run_dev *rd) {
  sm_step_prof *prof = p->prof;
  int64_t prof_t0 = prof ? sm__step_prof_now() : 0, prof_kernels = 0;
  for (int i = 0; i < p->nfetches; i++) outputs[i] = NULL;
  /* one block: the slot values, then a step's inputs as it reads them, then its ref reads */
  sm_tensor **vals = calloc((size_t)p->nslots + 2 * ((size_t)p->max_in + 1) + 1, sizeof *vals);
  sm_tensor **tmp = vals ? vals + p->nslots + 1 : NULL;
  const sm_tensor **in = vals ? (const sm_tensor **)(void *)(tmp + p->max_in + 1) : NULL;
  size_t *charge = mem ? calloc((size_t)p->nslots + 1, sizeof *charge) : NULL; /* bytes charged per slot */
  sm_status *st = NULL;
  int nout_done = 0;
  unsigned char *dead = p->has_dead ? calloc((size_t)p->nslots + (size_t)p->nsteps + 1, 1) : NULL;
  if (!vals || (mem && !charge) || (p->has_dead && !dead)) {
    st = sm_status_new(SM_NO_MEMORY, "run: out of memory");
    goto done;
  }
  for (int i = 0; i < p->nfeeds; i++) {
    if (!feeds[i]) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "feed '%s': no tensor given", p->feed_labels[i]);
      goto done;
    }
    int want = p->slot_dtype[p->feed_slot[i]], got = sm_tensor_dtype(feeds[i]);
    if (want && got != want && !(p->slot_ref[p->feed_slot[i]] && got == SM_RESOURCE)) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "feed '%s': expected a tensor of dtype %s, given %s", p->feed_labels[i],
                         dtname(want), dtname(got));
      goto done;
    }
    vals[p->feed_slot[i]] = sm_tensor_ref(feeds[i]);
  }
  for (int i = 0; i < p->nsteps; i++) {
    const sm_step *sp = &p->steps[i];
    const sm_node *nd = sp->node;
    if (ro && (st = run_stop(ro, i, p->nsteps, nd))) goto done;
    if (!sp->k) {
      int dt = sm__node_output_dtype(nd, 0);
      st = sm_status_new(SM_INVALID_ARGUMENT, "You must feed a value for placeholder tensor '%s' with dtype %s",
                         sm__node_name(nd), dtname(sm_dtype_base(dt)));
      goto done;
    }
    if (dead && step_is_dead(p, sp, dead)) {
      dead[p->nslots + i] = 1;
      for (int k = 0; k < sp->nout; k++) dead[sp->out_base + k] = 1;
      for (int r = 0; r < sp->nrelease; r++) {
        sm_tensor_free(vals[sp->release[r]]);
        vals[sp->release[r]] = NULL;
      }
      continue;
    }
    if (sp->backend != SM_BACKEND_CPU && (st = dev_open(p, rd))) goto done;
    for (int j = 0; j < sp->nin; j++) {
      sm_tensor *t = vals[sp->in_slot[j]];
      tmp[j] = NULL;
      if (!t && p->xsrc && p->xsrc[sp->in_slot[j]] >= 0) { /* a copy to the other space, made by its first reader */
        if ((st = make_copy(p, sp->in_slot[j], vals, rd))) {
          st = sm_status_prefix(st, "node '%s' (%s): input %d", sm__node_name(nd), sm__node_op(nd), j);
          goto done;
        }
        t = vals[sp->in_slot[j]];
      }
      if (!t && dead && sp->cf == SM_CF_MERGE && dead[sp->in_slot[j]]) {
        in[j] = NULL; /* a Merge sees its dead inputs as absent */
        continue;
      }
      if (!t) {
        sm_edge e = sm__node_input(nd, j);
        const sm_node *src = sm__rewrite_node(p->rw, sm__rewrite_edge(p->rw, e).node);
        st = sm_status_new(SM_INTERNAL, "node '%s' (%s): input %d ('%s:%d') has no value", sm__node_name(nd),
                           sm__node_op(nd), j, src ? sm__node_name(src) : "?", e.index);
        for (int q = 0; q < j; q++) sm_tensor_free(tmp[q]);
        goto done;
      }
      if (sp->in_mode[j] == SM_IN_READ_REF && sm_tensor_dtype(t) == SM_RESOURCE) {
        if ((st = read_ref(t, &tmp[j]))) {
          st = sm_status_prefix(st, "node '%s' (%s): input %d", sm__node_name(nd), sm__node_op(nd), j);
          for (int q = 0; q < j; q++) sm_tensor_free(tmp[q]);
          goto done;
        }
        in[j] = tmp[j];
      } else {
        in[j] = t;
      }
    }
    sm_kctx c = {env, ro, mem, charge ? charge + sp->out_base : NULL, depth, sp, nd, in, vals + sp->out_base, NULL, 0, 0,
                 i, p->nsteps, rd};
    sm_stop_src stop = {ro, 0}, *outer = sm__stop_src_swap(ro ? &stop : NULL);
    if (prof) {
      int64_t t = sm__step_prof_now();
      st = sp->k->compute(sp->state, &c);
      t = sm__step_prof_now() - t;
      sm__step_prof_step(prof, i, t);
      prof_kernels += t;
    } else {
      st = sp->k->compute(sp->state, &c);
    }
    sm__stop_src_swap(outer);
    int why = __atomic_load_n(&stop.stopped, __ATOMIC_RELAXED);
    if (why) { /* a loop of the kernel skipped chunks: whatever it returned is not a result */
      sm_status_free(st);
      st = why == SM_CANCELLED
               ? sm_status_new(SM_CANCELLED, "run cancelled during step %d of %d", i, p->nsteps)
               : sm_status_new(SM_DEADLINE_EXCEEDED, "deadline exceeded during step %d of %d", i, p->nsteps);
    }
    kctx_scratch_release(&c);
    for (int j = 0; j < sp->nin; j++) {
      sm_tensor_free(tmp[j]);
      tmp[j] = NULL;
    }
    if (st) {
      st = sm_status_prefix(st, "node '%s' (%s)", sm__node_name(nd), sm__node_op(nd));
      goto done;
    }
    for (int k = 0; k < sp->nout; k++) {
      sm_tensor *t = vals[sp->out_base + k];
      if (!t && sp->cf == SM_CF_SWITCH) dead[sp->out_base + k] = 1; /* the untaken branch */
      int want = p->slot_dtype[sp->out_base + k]; /* the node's output dtype (plan.c), without touching the node */
      if (!t || !want) continue;
      int got = sm_tensor_dtype(t);
      int ok = want >= SM_DTYPE_REF_OFFSET ? (got == SM_RESOURCE || got == want - SM_DTYPE_REF_OFFSET) : got == want;
      if (!ok) {
        st = sm_status_new(SM_INTERNAL, "node '%s' (%s): output %d is %s but the graph says %s", sm__node_name(nd),
                           sm__node_op(nd), k, dtname(got), dtname(want));
        goto done;
      }
    }
    for (int r = 0; r < sp->nrelease; r++) {
      sm_tensor_free(vals[sp->release[r]]);
      vals[sp->release[r]] = NULL;
      if (charge) {
        mem_give(mem, charge[sp->release[r]]);
        charge[sp->release[r]] = 0;
      }
    }
  }
  for (int i = 0; i < p->nfetches; i++) {
    sm_tensor *t = vals[p->fetch_slot[i]];
    if (!t && p->xsrc && p->xsrc[p->fetch_slot[i]] >= 0) { /* a device value comes back to the host */
      if ((st = make_copy(p, p->fetch_slot[i], vals, rd))) {
        st = sm_status_prefix(st, "fetch '%s'", p->fetch_labels[i]);
        goto done;
      }
      t = vals[p->fetch_slot[i]];
    }
    if (!t && dead && dead[p->fetch_slot[i]]) {
      st = sm_status_new(SM_INVALID_ARGUMENT, "Retval[%d] does not have value (fetch '%s' is dead: on an untaken "
                                              "branch of a TF1 conditional)",
                         i, p->fetch_labels[i]);
      goto done;
    }
    if (!t) {
      st = sm_status_new(SM_INTERNAL, "fetch '%s': the run produced no value for it", p->fetch_labels[i]);
      goto done;
    }
    if (p->slot_ref[p->fetch_slot[i]] && sm_tensor_dtype(t) == SM_RESOURCE) {
      if ((st = read_ref(t, &outputs[i]))) {
        st = sm_status_prefix(st, "fetch '%s'", p->fetch_labels[i]);
        goto done;
      }
    } else {
      outputs[i] = sm_tensor_ref(t);
    }
    nout_done = i + 1;
  }
done:
  if (st)
    for (int i = 0; i < nout_done; i++) {
      sm_tensor_free(outputs[i]);
      outputs[i] = NULL;
    }
  if (vals)
    for (int i = 0; i < p->nslots; i++) sm_tensor_free(vals[i]);
  if (depth == 0 && rd && rd->open) { /* the run's device work is done (or abandoned) */
    sm_status *e = rd->dev->run_end(rd->dev->ctx, rd->run);
    rd->open = 0;
    if (e && !st) {
      st = sm_status_prefix(e, "%s device", rd->dev->name);
      for (int i = 0; i < p->nfetches; i++) {
        sm_tensor_free(outputs[i]);
        outputs[i] = NULL;
      }
    } else {
      sm_status_free(e);
    }
  }
  if (charge)
    for (int i = 0; i < p->nslots; i++) mem_give(mem, charge[i]);
  free(charge);
  free(vals);
  free(dead);
  if (prof && !st) sm__step_prof_run(prof, sm__step_prof_now() - prof_t0, prof_kernels);
  return st;
}

sm_status *sm__plan_run(const sm_plan *p, const sm_exec_env *env, sm_tensor *const *feeds, sm_tensor **outputs,
                       const sm_run_options *ro) {
  if (!p || !env) return sm_status_new(SM_INVALID_ARGUMENT, "run: no plan or no environment");
  if ((p->nfeeds && !feeds) || (p->nfetches && !outputs))
    return sm_status_new(SM_INVALID_ARGUMENT, "run: the plan has %d feeds and %d fetches, arrays missing", p->nfeeds,
                         p->nfetches);
  if (p->backend != SM_BACKEND_CPU && !p->dev)
    return sm_status_new(SM_FAILED_PRECONDITION, "run: the plan was placed for %s without its device (inspection only)",
                         sm__backend_name(p->backend));
  run_mem *mem = NULL;
  if (ro && ro->max_run_bytes) {
    if (!(mem = sm__alloc(sizeof *mem))) return sm_status_new(SM_RESOURCE_EXHAUSTED, "run: out of memory");
    *mem = (run_mem){ro->max_run_bytes, 0, 1};
  }
  run_dev rd = {p->dev, NULL, 0};
  sm_fpmode fp = sm__fpmode_enter(); /* TF's denormal flush and rounding for the run (base/fpmode.h) */
  sm_status *s = exec(p, env, feeds, outputs, ro, 0, mem, p->dev ? &rd : NULL);
  sm__fpmode_leave(fp);
  mem_unref(mem);
  return s;
}

sm_status *sm__kctx_run_plan(sm_kctx *c, const sm_plan *sub, sm_tensor *const *inputs, int ninputs,
                            sm_tensor **outputs, int noutputs) {
  for (int i = 0; outputs && i < noutputs; i++) outputs[i] = NULL;
  if (!c || !sub) return sm_status_new(SM_INVALID_ARGUMENT, "run sub-plan: no context or no plan");
  const char *fn = sub->fname ? sub->fname : "(plan)";
  if (ninputs != sub->nfeeds || noutputs != sub->nfetches || (ninputs && !inputs) || (noutputs && !outputs))
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "function '%s' takes %d inputs and gives %d outputs; called with %d and %d", fn, sub->nfeeds,
                         sub->nfetches, ninputs, noutputs);
  if (c->depth + 1 > SM_PLAN_MAX_DEPTH)
    return sm_status_new(SM_OUT_OF_RANGE, "function '%s': sub-plans nest deeper than %d", fn, SM_PLAN_MAX_DEPTH);
  return sm_status_prefix(exec(sub, c->env, inputs, outputs, c->ro, c->depth + 1, c->mem, c->rd), "function '%s'", fn);
}

/* The steps of p that no feed reaches and whose kernels say SM_KERNEL_PRELOAD, in plan order (a
 * step runs when every input it reads has a value: made by such a step before it). Their outputs
 * are dropped; what stays is what their kernels keep in their state. A step that fails is skipped,
 * and so is every step reading its outputs: the first real run computes them and reports the
 * error there, as it would without this. */
void sm__plan_preload(const sm_plan *p, const sm_exec_env *env) {
  if (!p || !env || p->has_dead || p->dev || p->backend != SM_BACKEND_CPU) return;
  sm_tensor **vals = calloc((size_t)p->nslots + 2 * ((size_t)p->max_in + 1) + 1, sizeof *vals);
  if (!vals) return;
  sm_tensor **tmp = vals + p->nslots + 1;
  const sm_tensor **in = (const sm_tensor **)(void *)(tmp + p->max_in + 1);
  sm_fpmode fp = sm__fpmode_enter(); /* the mode of a run (TF folds constants in it too) */
  for (int i = 0; i < p->nsteps; i++) {
    const sm_step *sp = &p->steps[i];
    if (!sp->k || !(sp->k->flags & SM_KERNEL_PRELOAD) || sp->backend != SM_BACKEND_CPU) continue;
    int ok = 1;
    for (int j = 0; j < sp->nin && ok; j++) ok = vals[sp->in_slot[j]] != NULL;
    for (int j = 0; j < sp->nin && ok; j++) {
      sm_tensor *t = vals[sp->in_slot[j]];
      tmp[j] = NULL;
      if (sp->in_mode[j] == SM_IN_READ_REF && sm_tensor_dtype(t) == SM_RESOURCE) {
        sm_status *e = read_ref(t, &tmp[j]);
        if (e) {
          sm_status_free(e);
          ok = 0;
          for (int q = 0; q < j; q++) sm_tensor_free(tmp[q]), tmp[q] = NULL;
          break;
        }
        in[j] = tmp[j];
      } else {
        in[j] = t;
      }
    }
    if (!ok) continue;
    sm_kctx c = {env, NULL, NULL, NULL, 0, sp, sp->node, in, vals + sp->out_base, NULL, 0, 0, i, p->nsteps, NULL};
    sm_status *st = sp->k->compute(sp->state, &c);
    kctx_scratch_release(&c);
    for (int j = 0; j < sp->nin; j++) sm_tensor_free(tmp[j]), tmp[j] = NULL;
    if (st) { /* nothing of it is kept */
      sm_status_free(st);
      for (int k = 0; k < sp->nout; k++) sm_tensor_free(vals[sp->out_base + k]), vals[sp->out_base + k] = NULL;
      continue;
    }
    for (int r = 0; r < sp->nrelease; r++) {
      sm_tensor_free(vals[sp->release[r]]);
      vals[sp->release[r]] = NULL;
    }
  }
  sm__fpmode_leave(fp);
  for (int i = 0; i < p->nslots; i++) sm_tensor_free(vals[i]);
  free(vals);
}

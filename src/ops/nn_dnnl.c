/* nn_dnnl.c - the float32 NHWC convolutions (Conv2D, _FusedConv2D, DepthwiseConv2dNative) and
 * matrix products (MatMul, _FusedMatMul) that nn_conv.c / nn_matmul.c hand to oneDNN (Debian's
 * libdnnl 2.6, its C API), and Einsum's strided batched products of two activations (einsum.c,
 * sm__dnnl_bmm: cached primitives, nothing packed): what they own is the binding, the per-kernel
 * cache and the calls.
 *
 * Binding: like OpenBLAS (src/base/lazylib.c) the library is not linked but dlopened, once, at
 * the first kernel prepare that asks for it, so a program that never convolves does not pay for
 * its load (libstdc++, libgomp, libOpenCL) and a machine without it runs every model on the
 * kernels' own loops. Built only where CMake found dnnl.h (SM_HAVE_DNNL); otherwise every entry
 * point says "not available".
 *
 * Cache (sm__dnnl_cache, one per kernel instance): up to CACHE_SLOTS input shapes, each with its
 * primitive (oneDNN picks the weights' blocked layout for it: format_tag_any) and the weights
 * reordered once into that layout, in a buffer from sm__alloc_lasting (huge pages). The packed weights are keyed by
 * the weight tensor's data pointer and sm__tensor_uid: a Const packs once; a variable packs again
 * after each assign (a new tensor, so a new uid), never for a freed buffer reused by another
 * tensor. One mutex guards the slots; the primitive and the packed weights are reference-counted,
 * so a run holding them is not disturbed when another run repacks or evicts. Scratchpads are the
 * caller's (user mode, from sm__kctx_scratch), so concurrent runs of one primitive are safe.
 *
 * Threads: Debian builds oneDNN on OpenMP (libgomp). Its threads are not used: each call sets
 * omp_set_num_threads(1) on its own thread (an OpenMP ICV is per thread, so a host program's
 * OpenMP elsewhere is untouched) and the product is split over the run's pool instead (split_job):
 * by images, by bands of output rows of one image, or by slices of the filters (sm__dnnl_conv_split).
 * Layout: NHWC (oneDNN's brgconv) but for the shapes where its blocked nChw16c kernel is ~2x
 * faster (blocked_conv), which reorder in and out per call. Without AVX-512 (jit:avx2) the blocked
 * layout is nChw8c (blocked8_conv), and the spatial convolutions of many channels are im2col + a
 * oneDNN matmul instead (im2col_conv, conv_im2col), or, for the 3x3 stride-1 ones of 64+ channels,
 * Winograd F(2x2 / 3x3, 3x3) (wino_conv, nn_winograd_avx2.c; its transformed filter cached here too).
 * Numerics: oneDNN sums in its own order (as TF's oneDNN kernels do), within the interop
 * tolerance of TF; ReLU-like activations are its eltwise post-ops, the others the kernels' own; a
 * fused residual Add is its sum post-op over a copy of the addend made piece by piece. NaN through
 * a Relu / Relu6 post-op (oneDNN's max gives 0, TF's NaN) is noticed by the invalid flag and the
 * product redone (NAN_CHECK below). Its AVX2 convolutions, which would start the sums from the
 * bias, get bias, Add and activation after the product instead (prim's bias_after), so a fused
 * node has its unfused chain's bits on any CPU. */
#include "ops/nn_dnnl.h"

#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "base/alloc.h"
#include "base/lazylib.h"
#include "ops/nn_internal.h"

/* SM_DNNL_SPLIT (read with the library, below): 0 (the measured choice), 'r' rows, 'c' filter slices */
static int split_force;

/* How a convolution is split over the pool (oneDNN's time per piece, bench/RESULTS.md "session 13,
 * h1", per layer of ResNet50 / MobileNetV2 / VGG16 at batch 1 and 16): by images, by bands of
 * output rows (one image), or by slices of the filters (output channels). A slice reads all the
 * input and its share of the filters and writes through a dense copy; an image or band piece reads
 * its part of the input and all the filters. Which costs less is a matter of where the filters
 * live: under ~1.5 MB (COUT_MIN_FILTERS floats; the L2 is 2 MB a core on the Xeon VM) both
 * threads keep all of them in L2 and images / bands win (MobileNetV2 b16's 1x1s 5-50% less time,
 * VGG16's first 3x3 over 3 channels 2.6x less); from there on each thread's half of them is what
 * fits, and slices win (ResNet50 b16's 3x3 256 @4x4 28%, its 1x1 512->2048 @2x2 21%, VGG16's
 * 3x3 512 @4x4 10%). Images also win where the input outweighs the filters (512 -> 128 @8x8, 16
 * images). One image is split in slices also where its output has at most 16 pixels: a band of
 * a 4x4 or 2x2 output is one or two rows with as many halo rows (ResNet50 b1's 3x3 256 @4x4: 1.4
 * against 2.1 ms per call). With 64+ filters only (a slice is 16-filter aligned).
 * SM_DNNL_SPLIT=rows or =cout forces one (for A/B). */
#define COUT_MIN_FILTERS (384.0 * 1024.0)

int sm__dnnl_conv_split(const sm__dnnl_conv_args *a) {
  int couts = a->G == 1 && a->Cout >= 64;
  if (couts && split_force) couts = split_force == 'c';
  else if (couts) {
    double filt = (double)a->KH * (double)a->KW * (double)a->C * (double)a->Cout;
    double in = (double)a->N * (double)a->H * (double)a->W * (double)a->C;
    couts = a->N == 1 ? filt >= COUT_MIN_FILTERS || a->OH * a->OW <= 16 : filt >= COUT_MIN_FILTERS && filt >= in;
  }
  return couts ? 'c' : a->N == 1 ? 'r' : 'i';
}

#ifdef SM_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

#ifndef SM_DNNL_SONAME
#define SM_DNNL_SONAME "libdnnl.so.2"
#endif

#define DNNL_FNS(X)                                                                                             \
  X(dnnl_engine_create) X(dnnl_stream_create) X(dnnl_stream_destroy) X(dnnl_stream_wait)                        \
  X(dnnl_memory_desc_init_by_tag) X(dnnl_memory_desc_init_by_strides) X(dnnl_memory_desc_get_size) X(dnnl_memory_desc_equal)              \
  X(dnnl_dilated_convolution_forward_desc_init) X(dnnl_matmul_desc_init) X(dnnl_primitive_desc_create)          \
  X(dnnl_primitive_desc_destroy) X(dnnl_primitive_desc_query_md) X(dnnl_primitive_desc_query)                   \
  X(dnnl_primitive_create) X(dnnl_primitive_destroy) X(dnnl_primitive_execute) X(dnnl_memory_create)            \
  X(dnnl_memory_destroy) X(dnnl_reorder_primitive_desc_create) X(dnnl_post_ops_create) X(dnnl_post_ops_destroy) \
  X(dnnl_post_ops_append_eltwise) X(dnnl_post_ops_append_sum) X(dnnl_primitive_attr_create) X(dnnl_primitive_attr_destroy)                  \
  X(dnnl_primitive_attr_set_post_ops) X(dnnl_primitive_attr_set_scratchpad_mode) X(dnnl_memory_set_data_handle)

static struct {
#define X(f) __typeof__(f) *f;
  DNNL_FNS(X)
#undef X
  void (*omp_set_num_threads)(int);
} D;
static dnnl_engine_t engine;
static int loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
/* The A/B switches of bench/ (SM_DNNL_SPLIT=rows|cout, SM_DNNL_BLOCKED=0), read once with the
 * library rather than on every call. */
static int blocked_off;
/* SM_NN_ACT_GELU_ERF as oneDNN's eltwise_gelu_erf post-op (its own erf: within TF's tolerance, not
 * vmath's bits), computed on each block as the product finishes it; SM_DNNL_GELU=0 runs vmath's
 * GELU over each piece's output after the product instead (bench/RESULTS.md, session 16 h3). */
static int gelu_post_op;
/* SM_DNNL_RELU_NAN=0: NaN through a Relu / Relu6 post-op comes out 0 as oneDNN computes it (no
 * check, no redo; the behaviour before session 17, for A/B). */
static int relu_nan_off;
/* SM_DNNL_IM2COL: 0 never, 1 every spatial convolution it can take, unset the measured choice
 * (im2col_conv) */
static int im2col_force = -1;
/* SM_DNNL_BLOCKED8=0: no nChw8c on CPUs without AVX-512 (blocked_conv; for A/B) */
static int blocked8_off;
/* SM_DNNL_BAND1X1=0: a strided 1x1's row band ends on its last read row (piece_conv; for A/B) */
static int band_1x1_off;
/* SM_DNNL_MM_WIDE=1: wide, short products stay on oneDNN without AVX-512 (mm_wide_to_blas; for A/B) */
static int mm_wide_keep;
/* SM_NN_WINOGRAD: 0 never, 1 every 3x3 stride-1 convolution it can take, unset the measured choice
 * (wino_conv) */
static int wino_force = -1;
/* SM_NN_WINOGRAD_TILE=2 / 3 / 4: every Winograd convolution as F(2x2 / 3x3 / 4x4, 3x3); unset the
 * measured choice (wino_tile). F(4x4) is measurement only: 3e-6..9e-6 of the range off. */
static int wino_m_force;
/* SM_NN_WINOGRAD_CBLOCK=<n>: Winograd's channel sums in blocks of n channels, each block's sum then
 * added (0: one sum over all channels); unset: 0 for F(2x2) (within oneDNN's error as it is, and
 * blocks cost it 3-5%), 32 for F(3x3) and F(4x4) (half their error, wino_tile) */
static int64_t wino_cb_force = -1;

/* 1 on a CPU with AVX-512 (oneDNN's avx512_core kernels), computed once (a race computes it twice) */
static int cpu_avx512(void) {
#if defined(__x86_64__)
  static int have = -1;
  if (have < 0) have = __builtin_cpu_supports("avx512f") ? 1 : 0;
  return have;
#else
  return 0;
#endif
}

static void dnnl_load(void) {
  const char *e = getenv("SM_DNNL_GELU");
  gelu_post_op = !(e && !strcmp(e, "0"));
  e = getenv("SM_DNNL_RELU_NAN");
  relu_nan_off = e && !strcmp(e, "0");
  e = getenv("SM_DNNL_SPLIT");
  split_force = e && !strcmp(e, "rows") ? 'r' : e && !strcmp(e, "cout") ? 'c' : 0;
  e = getenv("SM_DNNL_BLOCKED");
  blocked_off = e && !strcmp(e, "0");
  e = getenv("SM_DNNL_IM2COL");
  im2col_force = e && !strcmp(e, "0") ? 0 : e && !strcmp(e, "1") ? 1 : -1;
  e = getenv("SM_DNNL_BLOCKED8");
  blocked8_off = e && !strcmp(e, "0");
  e = getenv("SM_DNNL_BAND1X1");
  band_1x1_off = e && !strcmp(e, "0");
  e = getenv("SM_DNNL_MM_WIDE");
  mm_wide_keep = e && !strcmp(e, "1");
  e = getenv("SM_NN_WINOGRAD");
  wino_force = e && !strcmp(e, "0") ? 0 : e && !strcmp(e, "1") ? 1 : -1;
  e = getenv("SM_NN_WINOGRAD_TILE");
  wino_m_force = e && !strcmp(e, "4") ? 4 : e && !strcmp(e, "3") ? 3 : e && !strcmp(e, "2") ? 2 : 0;
  e = getenv("SM_NN_WINOGRAD_CBLOCK");
  wino_cb_force = e && *e ? atoll(e) : -1;
  void *h = dlopen(SM_DNNL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  int ok = 1;
#define X(f)              \
  SM_BIND(h, D.f, #f);    \
  ok &= D.f != NULL;
  DNNL_FNS(X)
#undef X
  SM_BIND(h, D.omp_set_num_threads, "omp_set_num_threads"); /* NULL: a non-OpenMP build */
  /* the library stays loaded for the process's life (OpenMP's threads, the engine) */
  if (ok && D.dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success) loaded = 1;
}

/* Sanitizer builds leave oneDNN off unless SM_DNNL=1: LeakSanitizer's exit scan crashes ("Tracer
 * caught signal 11") on the dynamic TLS that libgomp/oneDNN leave on the CLI's threads, and counts
 * the TLS-held blocks as leaks when told to skip TLS. Their ctest runs the nn and zoo tests with
 * SM_DNNL=1 (CMakeLists.txt), where the threads end before the scan. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SM_DNNL_DEFAULT_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SM_DNNL_DEFAULT_OFF 1
#endif
#endif
#ifndef SM_DNNL_DEFAULT_OFF
#define SM_DNNL_DEFAULT_OFF 0
#endif

int sm__dnnl_enabled(void) {
  const char *e = getenv("SM_DNNL");
  if (e && !strcmp(e, "0")) return 0;
  if (SM_DNNL_DEFAULT_OFF && !(e && !strcmp(e, "1"))) return 0;
  pthread_once(&load_once, dnnl_load);
  return loaded;
}

/* ---- the cache ------------------------------------------------------------------------------ */
#define CACHE_SLOTS 8
#define KEY_LEN 20

typedef struct prim { /* one shape's primitive and its layouts; refs under the cache's mutex */
  int refs;
  uint64_t id; /* unique in the process (a freed primitive's address may come back): thread_mem's key */
  dnnl_primitive_t p;
  dnnl_memory_desc_t src, wei, uwei, bias, dst, scratch;
  size_t scratch_bytes;
  int64_t macs_per_out; /* multiply-adds per output element (the thread count's rule) */
  /* src and dst blocked (nChw16c; blocked_conv): the run reorders the user's NHWC (usrc, udst)
   * into them (rin) and the result back (rout), which adds it to the addend there when the
   * convolution sums one (rout has the sum then, the primitive no post-ops: act_after) */
  int blocked, act_after;
  int nan_check; /* its post-ops end in a max(x, 0) that maps NaN to 0: execute watches for NaN */
  /* bias_first: oneDNN's kernel starts its sums from the bias (or, with the sum post-op, from
   * what dst holds): its AVX2 / SSE4.1 jit kernels (jit:avx2, jit_1x1:avx2, jit_dw:avx2, what a
   * CPU without AVX-512 runs) start each accumulator from the bias vector, so bias + (x0 w0 +
   * ...) where Conv2D then BiasAdd give (x0 w0 + ...) + bias: other bits (and -0 where TF's sum
   * of -0 products and a -0 bias is +0). The AVX-512 kernels (brgconv, jit:avx512_core) and gemm
   * add the bias after the sum. bias_after: a convolution built without its bias, sum and
   * activation, which execute / conv_chunk add after the product in the unfused chain's order
   * (build_conv_in; no post-op, so no NaN check either: the own Relu loop keeps NaN) */
  int bias_first, bias_after;
  dnnl_memory_desc_t usrc, udst;
  dnnl_primitive_t rin, rout;
} prim;

typedef struct pack { /* weights in prim->wei's layout */
  int refs;
  void *raw; /* sm__alloc'd; mem's handle is raw aligned to 64 */
  dnnl_memory_t mem;
} pack;

typedef struct slot {
  int used, declined; /* declined: oneDNN has no (fast) primitive for this shape */
  int64_t key[KEY_LEN];
  uint64_t last; /* for eviction: the least recently used slot goes */
  prim *pr;
  pack *w;
  const void *wptr;
  uint64_t wuid;
} slot;

/* The filter transformed for Winograd (wino_conv): keyed as a slot's pack, one per cache (a
 * kernel instance has one filter); reference-counted under the cache's mutex. */
typedef struct wpack {
  int refs, m;
  const void *wptr;
  uint64_t wuid;
  int64_t C, K;
  float *U;
} wpack;

struct sm__dnnl_cache {
  pthread_mutex_t mu;
  uint64_t tick;
  slot s[CACHE_SLOTS];
  wpack *wino;
};

static void wpack_unref(wpack *w) {
  if (!w || --w->refs) return;
  sm__free(w->U);
  sm__free(w);
}

sm_status *sm__dnnl_cache_new(sm__dnnl_cache **out) {
  sm__dnnl_cache *c = sm__calloc(sizeof *c);
  *out = NULL;
  if (!c) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a oneDNN cache");
  if (pthread_mutex_init(&c->mu, NULL)) {
    sm__free(c);
    return sm_status_new(SM_INTERNAL, "oneDNN cache: pthread_mutex_init failed");
  }
  *out = c;
  return NULL;
}

static void prim_unref(prim *p) {
  if (!p || --p->refs) return;
  dnnl_primitive_t ps[3] = {p->p, p->rin, p->rout};
  for (int i = 0; i < 3; i++)
    if (ps[i]) D.dnnl_primitive_destroy(ps[i]);
  sm__free(p);
}

static void pack_unref(pack *w) {
  if (!w || --w->refs) return;
  if (w->mem) D.dnnl_memory_destroy(w->mem);
  sm__free(w->raw);
  sm__free(w);
}

static void slot_clear(slot *s) {
  prim_unref(s->pr);
  pack_unref(s->w);
  memset(s, 0, sizeof *s);
}

void sm__dnnl_cache_free(sm__dnnl_cache *c) {
  if (!c) return;
  for (int i = 0; i < CACHE_SLOTS; i++) slot_clear(&c->s[i]);
  wpack_unref(c->wino);
  pthread_mutex_destroy(&c->mu);
  sm__free(c);
}

static sm_status *dnnl_err(dnnl_status_t s, const char *what) {
  if (s == dnnl_out_of_memory) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in oneDNN (%s)", what);
  return sm_status_new(SM_INTERNAL, "oneDNN %s failed (status %d)", what, (int)s);
}

/* ---- building a primitive ------------------------------------------------------------------- */

/* NaN through a Relu / Relu6 post-op (TF keeps it: Relu(NaN) is NaN in TF's Eigen kernels; TF's own
 * oneDNN kernels, TF_ENABLE_ONEDNN_OPTS=1, give 0 as oneDNN does): oneDNN computes them as
 * vmaxps(x, 0), which returns 0 for a NaN x - and, as every MAXPS does, raises the invalid-operation
 * flag (MXCSR.IE) for it. So a piece whose primitive ends in such a post-op runs with IE cleared on
 * its thread (oneDNN runs on ours) and is checked after: IE raised means some NaN met the max (or
 * came from Inf - Inf, Inf * 0 on the way), and the whole product is done again without the
 * post-op and the kernels' own Relu / Relu6 loop (nn_norm.c, which keeps NaN) run over it. Normal
 * data raises no IE: two MXCSR reads per piece. An addend summed in place (the residual Add whose
 * buffer is the output) cannot be redone, so there the activation runs after the product on each
 * piece instead (act_after). x86-64 only; elsewhere the post-op as it is. SM_DNNL_RELU_NAN=0: no
 * check (NaN -> 0, for A/B). */
#if defined(__x86_64__)
#define NAN_CHECK 1
#define MXCSR_IE 0x1u
#else
#define NAN_CHECK 0
#endif

/* Whether act runs as oneDNN's eltwise post-op: only those it computes bit for bit as the kernels'
 * epilogue (and the unfused Relu/Relu6/LeakyRelu kernels) do, so a fused node and its unfused
 * chain agree exactly (test_rewrite); Elu, Sigmoid and Tanh run after oneDNN through
 * sm__nn_bias_act_f32 (vmath.c), as the unfused ops do. The erf GELU is the exception: oneDNN's
 * post-op unless SM_DNNL_GELU=0 (gelu_post_op above). */
static int act_is_post_op(int act) {
  return act == SM_NN_ACT_NONE || act == SM_NN_ACT_RELU || act == SM_NN_ACT_RELU6 || act == SM_NN_ACT_LEAKY_RELU ||
         (act == SM_NN_ACT_GELU_ERF && gelu_post_op);
}

/* The fused residual Add (sum: dst += the product, dst holding the addend beforehand) and the
 * activation as post-ops, in attr (with user scratchpads); 0 on failure. The sum comes after the
 * bias, so dst = (product + bias) + addend, the bits of BiasAdd then AddV2. */
static int make_attr(int act, float alpha, int sum, dnnl_primitive_attr_t *attr, int *kills_nan) {
  dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
  float a = 0.0f;
  switch (act) {
    case SM_NN_ACT_RELU: alg = dnnl_eltwise_relu; break;
    case SM_NN_ACT_RELU6: alg = dnnl_eltwise_bounded_relu, a = 6.0f; break;
    case SM_NN_ACT_LEAKY_RELU: alg = dnnl_eltwise_relu, a = alpha; break;
    case SM_NN_ACT_GELU_ERF: alg = gelu_post_op ? dnnl_eltwise_gelu_erf : dnnl_alg_kind_undef; break;
    default: break; /* none, or run after the product */
  }
  /* oneDNN's relu with alpha 0 (-0.0 too) and its bounded relu are vmaxps(x, 0): NaN -> 0 */
  *kills_nan = (alg == dnnl_eltwise_relu && a == 0.0f) || alg == dnnl_eltwise_bounded_relu;
  if (D.dnnl_primitive_attr_create(attr) != dnnl_success) return 0;
  int ok = D.dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user) == dnnl_success;
  if (ok && (alg != dnnl_alg_kind_undef || sum)) {
    dnnl_post_ops_t po;
    ok = D.dnnl_post_ops_create(&po) == dnnl_success;
    if (ok) {
      ok = (!sum || D.dnnl_post_ops_append_sum(po, 1.0f) == dnnl_success) &&
           (alg == dnnl_alg_kind_undef || D.dnnl_post_ops_append_eltwise(po, 1.0f, alg, a, 0.0f) == dnnl_success) &&
           D.dnnl_primitive_attr_set_post_ops(*attr, po) == dnnl_success;
      D.dnnl_post_ops_destroy(po);
    }
  }
  if (!ok) D.dnnl_primitive_attr_destroy(*attr);
  return ok;
}

/* A primitive for op_desc in *out, or NULL there when oneDNN has none or only a reference
 * implementation (slower than the kernels' own loops). Fills the layouts the run needs. An error
 * only when out of memory: a fallback would give other bits than the run without the failure. */
static sm_status *make_prim(const void *op_desc, int act, float alpha, int sum, const dnnl_memory_desc_t *uwei,
                            int64_t macs_per_out, prim **out) {
  *out = NULL;
  dnnl_primitive_attr_t attr;
  int kills_nan = 0;
  if (!make_attr(act, alpha, sum, &attr, &kills_nan))
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in oneDNN (attributes)");
  dnnl_primitive_desc_t pd = NULL;
  prim *p = NULL;
  sm_status *st = NULL;
  dnnl_status_t s = D.dnnl_primitive_desc_create(&pd, op_desc, attr, engine, NULL);
  D.dnnl_primitive_attr_destroy(attr);
  if (s == dnnl_out_of_memory) return dnnl_err(s, "primitive descriptor");
  if (s != dnnl_success) return NULL;
  const char *impl = NULL;
  if (D.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl ||
      !strncmp(impl, "ref", 3))
    goto done;
  if (!(p = sm__calloc(sizeof *p))) {
    st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a oneDNN primitive");
    goto done;
  }
  static uint64_t next_id;
  p->refs = 1;
  p->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
  p->src = *D.dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  p->wei = *D.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  p->bias = *D.dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 1);
  p->dst = *D.dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  p->scratch = *D.dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  p->scratch_bytes = D.dnnl_memory_desc_get_size(&p->scratch);
  p->uwei = *uwei;
  p->macs_per_out = macs_per_out;
  p->nan_check = kills_nan && NAN_CHECK && !relu_nan_off;
  p->bias_first = strstr(impl, "avx2") || strstr(impl, "sse41");
  if ((s = D.dnnl_primitive_create(&p->p, pd)) != dnnl_success) {
    sm__free(p);
    p = NULL;
    if (s == dnnl_out_of_memory) st = dnnl_err(s, "primitive");
  }
done:
  D.dnnl_primitive_desc_destroy(pd);
  *out = p;
  return st;
}

/* Reorders the weights at w (layout pr->uwei) into a new pack in pr->wei's layout. */
static sm_status *make_pack(const prim *pr, const void *w, pack **out) {
  size_t bytes = D.dnnl_memory_desc_get_size(&pr->wei);
  pack *pk = sm__calloc(sizeof *pk);
  if (!pk || !(pk->raw = sm__alloc_lasting(bytes + 64))) { /* on huge pages: streamed every call */
    sm__free(pk);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes of packed weights", bytes);
  }
  pk->refs = 1;
  void *aligned = (void *)(((uintptr_t)pk->raw + 63) & ~(uintptr_t)63);
  dnnl_memory_t user = NULL;
  dnnl_primitive_desc_t rpd = NULL;
  dnnl_primitive_t r = NULL;
  dnnl_stream_t stream = NULL;
  dnnl_status_t s = D.dnnl_memory_create(&pk->mem, &pr->wei, engine, aligned);
  if (s == dnnl_success) s = D.dnnl_memory_create(&user, &pr->uwei, engine, (void *)w);
  if (s == dnnl_success) s = D.dnnl_reorder_primitive_desc_create(&rpd, &pr->uwei, engine, &pr->wei, engine, NULL);
  if (s == dnnl_success) s = D.dnnl_primitive_create(&r, rpd);
  if (s == dnnl_success) s = D.dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
  if (s == dnnl_success) {
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, pk->mem}};
    s = D.dnnl_primitive_execute(r, stream, 2, args);
    if (s == dnnl_success) s = D.dnnl_stream_wait(stream);
  }
  if (stream) D.dnnl_stream_destroy(stream);
  if (r) D.dnnl_primitive_destroy(r);
  if (rpd) D.dnnl_primitive_desc_destroy(rpd);
  if (user) D.dnnl_memory_destroy(user);
  if (s != dnnl_success) {
    pack_unref(pk);
    return dnnl_err(s, "reordering the weights");
  }
  *out = pk;
  return NULL;
}

/* ---- running ---------------------------------------------------------------------------------- */

typedef sm_status *(*build_fn)(const void *args, prim **out);

/* Finds or builds the slot for key, packs the weights w (tensor uid) if they are not the slot's,
 * and returns the primitive and pack with a reference each; *pr NULL when declined. */
static sm_status *acquire(sm__dnnl_cache *c, const int64_t *key, build_fn build, const void *args, const void *w,
                          uint64_t uid, prim **pr, pack **pk) {
  *pr = NULL;
  *pk = NULL;
  /* before oneDNN does anything on this thread: building a primitive may run an OpenMP region
   * too, which would start OpenMP's threads (2 on this machine) for nothing */
  if (D.omp_set_num_threads) D.omp_set_num_threads(1);
  sm_status *st = NULL;
  pthread_mutex_lock(&c->mu);
  slot *s = NULL, *victim = &c->s[0];
  for (int i = 0; i < CACHE_SLOTS && !s; i++) {
    if (c->s[i].used && !memcmp(c->s[i].key, key, sizeof c->s[i].key)) s = &c->s[i];
    else if (!c->s[i].used ? victim->used : (victim->used && c->s[i].last < victim->last)) victim = &c->s[i];
  }
  if (!s) {
    prim *p = NULL;
    if ((st = build(args, &p))) goto out;
    s = victim;
    slot_clear(s);
    s->used = 1;
    memcpy(s->key, key, sizeof s->key);
    s->pr = p;
    s->declined = !p;
  }
  s->last = ++c->tick;
  if (s->declined) goto out;
  if (w && (!s->w || s->wptr != w || s->wuid != uid)) { /* w NULL: nothing to pack (sm__dnnl_bmm) */
    pack *np = NULL;
    /* another shape's pack of these weights in the same layout (the pieces of a split product) */
    for (int i = 0; i < CACHE_SLOTS && !np; i++) {
      slot *o = &c->s[i];
      if (o != s && o->w && o->wptr == w && o->wuid == uid && D.dnnl_memory_desc_equal(&o->pr->wei, &s->pr->wei) &&
          D.dnnl_memory_desc_equal(&o->pr->uwei, &s->pr->uwei))
        (np = o->w)->refs++;
    }
    if (!np && (st = make_pack(s->pr, w, &np))) goto out;
    pack_unref(s->w);
    s->w = np;
    s->wptr = w;
    s->wuid = uid;
  }
  s->pr->refs++;
  if (s->w) s->w->refs++;
  *pr = s->pr;
  *pk = s->w;
out:
  pthread_mutex_unlock(&c->mu);
  return st;
}

/* Drops the references acquire took. */
static void release(sm__dnnl_cache *c, prim *pr, pack *pk) {
  pthread_mutex_lock(&c->mu);
  prim_unref(pr);
  pack_unref(pk);
  pthread_mutex_unlock(&c->mu);
}

/* A thread's oneDNN call objects, kept from call to call (a call made them all anew: four memory
 * objects, a stream and a scratchpad allocation, ~5% of MobileNetV2's instructions at batch 1):
 * one stream, one scratchpad buffer grown to the largest asked, and per primitive (keyed by its
 * id, MEM_SETS of them, direct-mapped) its src, dst, bias and scratchpad memory objects, pointed at
 * each call's buffers with dnnl_memory_set_data_handle. A memory object is independent of the
 * primitive it was made for (it copies the descriptor), so an evicted or freed primitive leaves
 * nothing dangling. Freed when the thread ends. Blocked primitives (reorders in and out) still make
 * theirs per call. The thread's blocks are the C library's (they outlive any run, as oneDNN's own
 * objects do), not base/alloc.h's. Primitive ids are handed out in order, so two primitives share
 * a set only when their ids are MEM_SETS apart: a model's primitives (one per shape of piece) each
 * keep theirs. With 64 sets, ResNet50 b1 remade ~40 sets a call, EfficientNetB0 ~60 and
 * DenseNet121 ~190 (each: its memory objects destroyed and created anew), 2.5%, 6% and 7% of a call
 * (bench/RESULTS.md session 15, h5). 40 KB a thread. */
#define MEM_SETS 1024
typedef struct mem_set {
  uint64_t id; /* the primitive's; 0: empty */
  dnnl_memory_t m[4];
} mem_set;
typedef struct thread_mem {
  dnnl_stream_t stream;
  void *scratch;
  size_t scratch_cap;
  mem_set set[MEM_SETS];
} thread_mem;
static pthread_key_t tm_key;
static pthread_once_t tm_once = PTHREAD_ONCE_INIT;
static int tm_ok;
static _Thread_local thread_mem *tm_self;

static void mem_set_clear(mem_set *ms) {
  for (int i = 0; i < 4; i++)
    if (ms->m[i]) D.dnnl_memory_destroy(ms->m[i]);
  memset(ms, 0, sizeof *ms);
}

static void tm_free(void *p) {
  thread_mem *t = p;
  if (!t) return;
  for (int i = 0; i < MEM_SETS; i++) mem_set_clear(&t->set[i]);
  if (t->stream) D.dnnl_stream_destroy(t->stream);
  free(t->scratch);
  free(t);
}

static void tm_init(void) { tm_ok = pthread_key_create(&tm_key, tm_free) == 0; }

/* This thread's objects (NULL when out of memory). */
static thread_mem *thread_mem_get(void) {
  if (tm_self) return tm_self;
  pthread_once(&tm_once, tm_init);
  thread_mem *t = tm_ok ? calloc(1, sizeof *t) : NULL;
  if (!t) return NULL;
  if (D.dnnl_stream_create(&t->stream, engine, dnnl_stream_default_flags) != dnnl_success ||
      pthread_setspecific(tm_key, t)) {
    tm_free(t);
    return NULL;
  }
  return tm_self = t;
}

/* pr's memory objects on this thread pointed at (src, dst, bias, the thread's scratchpad): m[0..3]
 * (bias and scratch NULL where pr has none), or dnnl's failure status. */
static dnnl_status_t thread_mems(thread_mem *t, const prim *pr, const void *src, void *dst, const void *bias,
                                 dnnl_memory_t m[4]) {
  if (pr->scratch_bytes > t->scratch_cap) {
    void *ns = malloc(pr->scratch_bytes);
    if (!ns) return dnnl_out_of_memory;
    free(t->scratch); /* (every call points its memory objects at their buffers anew) */
    t->scratch = ns;
    t->scratch_cap = pr->scratch_bytes;
  }
  mem_set *ms = &t->set[pr->id % MEM_SETS];
  const dnnl_memory_desc_t *md[4] = {&pr->src, &pr->dst, &pr->bias, &pr->scratch};
  void *h[4] = {(void *)src, dst, (void *)bias, pr->scratch_bytes ? t->scratch : NULL};
  dnnl_status_t s = dnnl_success;
  int same = ms->id == pr->id;
  for (int i = 0; i < 4 && same; i++) same = !ms->m[i] == !h[i];
  if (!same) {
    mem_set_clear(ms);
    for (int i = 0; i < 4 && s == dnnl_success; i++)
      if (h[i]) s = D.dnnl_memory_create(&ms->m[i], md[i], engine, h[i]);
    if (s != dnnl_success) {
      mem_set_clear(ms);
      return s;
    }
    ms->id = pr->id;
  } else {
    for (int i = 0; i < 4 && s == dnnl_success; i++)
      if (h[i]) s = D.dnnl_memory_set_data_handle(ms->m[i], h[i]);
  }
  for (int i = 0; i < 4; i++) m[i] = ms->m[i];
  return s;
}

/* Runs pr on (src, packed weights, bias, dst) on this thread, then act over the rows x cols of dst
 * where it is not a post-op. Its scratchpad is the thread's (thread_mem: it runs on pool workers,
 * which must not use the kctx); a blocked primitive's comes from sm__alloc. Drops the references
 * acquire took. */
static sm_status *execute(sm__dnnl_cache *c, prim *pr, pack *pk, const void *wsrc, const void *src, const void *bias,
                          void *dst, int64_t rows, int64_t cols, int act, float alpha, int *nan) {
  sm_status *st = NULL;
  void *scratch = NULL, *bsrc = NULL, *bdst = NULL;
  /* src, dst, bias, scratch; user src, dst; the weights as they are (pk NULL: wsrc in pr->wei) */
  dnnl_memory_t m[7] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
  dnnl_stream_t stream = NULL;
  dnnl_status_t s = dnnl_success;
  thread_mem *t = pr->blocked ? NULL : thread_mem_get(); /* NULL: all made for this call */
  if (t) {
    stream = t->stream;
    s = thread_mems(t, pr, src, dst, pr->bias_after ? NULL : bias, m);
  } else {
    size_t nsrc = pr->blocked ? D.dnnl_memory_desc_get_size(&pr->src) : 0;
    size_t ndst = pr->blocked ? D.dnnl_memory_desc_get_size(&pr->dst) : 0;
    if ((pr->scratch_bytes && !(scratch = sm__alloc(pr->scratch_bytes))) || (nsrc && !(bsrc = sm__alloc(nsrc))) ||
        (ndst && !(bdst = sm__alloc(ndst)))) {
      st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating a oneDNN scratchpad or blocked copy (%zu bytes)",
                         pr->scratch_bytes + nsrc + ndst);
      goto out;
    }
    s = D.dnnl_memory_create(&m[0], &pr->src, engine, pr->blocked ? bsrc : (void *)src);
    if (s == dnnl_success) s = D.dnnl_memory_create(&m[1], &pr->dst, engine, pr->blocked ? bdst : dst);
    if (s == dnnl_success && bias && !pr->bias_after) s = D.dnnl_memory_create(&m[2], &pr->bias, engine, (void *)bias);
    if (s == dnnl_success && scratch) s = D.dnnl_memory_create(&m[3], &pr->scratch, engine, scratch);
    if (s == dnnl_success && pr->blocked) s = D.dnnl_memory_create(&m[4], &pr->usrc, engine, (void *)src);
    if (s == dnnl_success && pr->blocked) s = D.dnnl_memory_create(&m[5], &pr->udst, engine, dst);
    if (s == dnnl_success) s = D.dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
  }
  if (s == dnnl_success && !pk) s = D.dnnl_memory_create(&m[6], &pr->wei, engine, (void *)wsrc); /* per call */
  if (s == dnnl_success && pr->blocked) { /* NHWC in */
    dnnl_exec_arg_t in[2] = {{DNNL_ARG_FROM, m[4]}, {DNNL_ARG_TO, m[0]}};
    s = D.dnnl_primitive_execute(pr->rin, stream, 2, in);
  }
#if NAN_CHECK
  unsigned csr = 0;
  if (pr->nan_check && ((csr = _mm_getcsr()) & MXCSR_IE)) _mm_setcsr(csr & ~MXCSR_IE); /* raised before */
#endif
  if (s == dnnl_success) {
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, pk ? pk->mem : m[6]}, {DNNL_ARG_DST, m[1]}};
    int n = 3;
    if (m[2]) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, m[2]};
    if (m[3]) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[3]};
    s = D.dnnl_primitive_execute(pr->p, stream, n, args);
  }
#if NAN_CHECK
  if (pr->nan_check) {
    unsigned after = _mm_getcsr();
    if (after & MXCSR_IE) *nan = 1;
    else if (csr & MXCSR_IE) _mm_setcsr(after | MXCSR_IE); /* the flag as it was */
  }
#endif
  if (s == dnnl_success && pr->blocked) { /* and NHWC out */
    dnnl_exec_arg_t o[2] = {{DNNL_ARG_FROM, m[1]}, {DNNL_ARG_TO, m[5]}};
    s = D.dnnl_primitive_execute(pr->rout, stream, 2, o);
  }
  if (s == dnnl_success) s = D.dnnl_stream_wait(stream);
  if (s != dnnl_success) st = dnnl_err(s, "execution");
  else if (pr->bias_after) {
    if (bias || act != SM_NN_ACT_NONE) sm__nn_bias_act_f32(dst, dst, rows, cols, bias, act, alpha);
  }
  else if (!act_is_post_op(act) || pr->act_after) sm__nn_bias_act_f32(dst, dst, rows, cols, NULL, act, alpha);
out:
  if (!t) {
    if (stream) D.dnnl_stream_destroy(stream);
    for (int i = 0; i < 6; i++)
      if (m[i]) D.dnnl_memory_destroy(m[i]);
  }
  if (m[6]) D.dnnl_memory_destroy(m[6]);
  sm__free(scratch);
  sm__free(bsrc);
  sm__free(bdst);
  release(c, pr, pk);
  return st;
}

/* One product split over the run's pool along its leading dimension (images of a convolution,
 * rows of a matmul): each chunk is one single-threaded oneDNN call with a primitive for the
 * chunk's size (cached like any other shape). Why not oneDNN's own OpenMP threads: their static
 * split waits at a barrier for the slowest thread, and on a shared VM a descheduled vCPU made a
 * 2-thread ResNet50 batch-1 call 3x slower than one thread (bench/RESULTS.md); the pool's chunks
 * are claimed as threads arrive, so the caller does the work of a worker that never comes. */
typedef struct split_job {
  sm__dnnl_cache *c;
  int64_t n, per; /* the leading dimension, cut in fixed pieces of per (so at most two shapes) */
  int bands;      /* a convolution of one image: the pieces are bands of output rows */
  int couts;      /* ... or slices of its filters (output channels): n is Cout */
  int ncols;      /* a matrix product in slices of its columns (n is N) rather than rows */
  const sm__dnnl_conv_args *conv; /* one of these two */
  const sm__dnnl_mm_args *mm;
  const sm__dnnl_bmm_args *bmm; /* ... or this (pieces along its batch dim 0) */
  sm_status *err;                 /* the first error (set once, by compare-and-swap) */
  int declined;                   /* some chunk had no primitive: the caller redoes it all */
  int nan;                        /* a Relu post-op met NaN (NAN_CHECK): the caller redoes it */
} split_job;

/* One oneDNN convolution call: a, whose output (and addend) rows are ldo floats apart (a.Cout
 * but for a slice of the filters, whose a.filt, a.bias, a.y and a.addend point at channel o0). */
typedef struct conv_piece {
  sm__dnnl_conv_args a;
  int64_t ldo, o0;
} conv_piece;

static sm_status *conv_chunk(sm__dnnl_cache *c, const conv_piece *p, int *declined, int *nan);
static void conv_key(const conv_piece *p, int64_t key[KEY_LEN]);
static sm_status *build_conv(const void *args, prim **out);
static sm_status *build_conv_in(const conv_piece *p, dnnl_format_tag_t tag, prim **out);
/* One oneDNN matmul call: a, whose B and C rows are ldb floats apart (a.N but for a slice of the
 * columns, whose a.b, a.bias and a.c point at column n0). */
typedef struct mm_piece {
  sm__dnnl_mm_args a;
  int64_t ldb, n0;
} mm_piece;

static sm_status *mm_chunk(sm__dnnl_cache *c, const mm_piece *p, int *declined, int *nan);
static sm_status *bmm_chunk(sm__dnnl_cache *c, const sm__dnnl_bmm_args *a, int *declined);
static void split_piece(split_job *j, int64_t begin, int64_t end);

static void split_chunk(void *ctx, int64_t first, int64_t last) {
  split_job *j = ctx;
  for (int64_t i = first; i < last; i++) {
    int64_t begin = i * j->per, end = begin + j->per < j->n ? begin + j->per : j->n;
    if (__atomic_load_n(&j->err, __ATOMIC_RELAXED) || __atomic_load_n(&j->declined, __ATOMIC_RELAXED)) return;
    split_piece(j, begin, end);
  }
}

/* The arguments of the convolution piece [begin, end) of j. */
static void piece_conv(const split_job *j, int64_t begin, int64_t end, conv_piece *out) {
  sm__dnnl_conv_args a = *j->conv;
  out->ldo = a.Cout;
  out->o0 = 0;
  if (j->couts) { /* filters [begin, end): the same input, every output row's channels [begin, end) */
    a.Cout = end - begin;
    a.filt += begin;
    if (a.bias) a.bias += begin;
    a.y += begin;
    if (a.addend) a.addend += begin;
    out->o0 = begin;
  } else if (j->bands) { /* one image: output rows [begin, end) from the input rows they read */
    int64_t top = begin * a.sh - a.pt, r0 = top > 0 ? top : 0;
    int64_t r1 = (end - 1) * a.sh - a.pt + (a.KH - 1) * a.dh + 1;
    /* a strided 1x1: the band takes the sh - 1 input rows after its last one too (read by no
     * output; the whole image's shape has them as well, its bottom pad negative): oneDNN's
     * jit_1x1:avx2 takes such a band, where one ending on its last read row went to the generic
     * jit:avx2, 2x slower (ResNet50 b1's conv3_block1_0: bench/RESULTS.md, session 19 c6) */
    if (a.KH == 1 && a.sh > 1 && !band_1x1_off) r1 += a.sh - 1;
    if (r1 > a.H) r1 = a.H;
    a.x += r0 * a.W * a.C;
    a.y += begin * a.OW * a.Cout;
    if (a.addend) a.addend += begin * a.OW * a.Cout;
    a.H = r1 - r0;
    a.OH = end - begin;
    a.pt = r0 - top;
  } else {
    a.N = end - begin;
    a.x += begin * a.H * a.W * a.C;
    a.y += begin * a.OH * a.OW * a.Cout;
    if (a.addend) a.addend += begin * a.OH * a.OW * a.Cout;
  }
  out->a = a;
}

static void split_piece(split_job *j, int64_t begin, int64_t end) {
  sm_status *st;
  int declined = 0, nan = 0;
  if (j->conv) {
    conv_piece a;
    piece_conv(j, begin, end, &a);
    st = conv_chunk(j->c, &a, &declined, &nan);
  } else if (j->bmm) { /* batches [begin, end) of batch dim 0 */
    sm__dnnl_bmm_args a = *j->bmm;
    a.bd[0] = end - begin;
    a.a += begin * a.sa[0];
    a.b += begin * a.sb[0];
    a.c += begin * a.sc[0];
    st = bmm_chunk(j->c, &a, &declined);
  } else {
    mm_piece p = {*j->mm, j->mm->N, 0};
    sm__dnnl_mm_args *a = &p.a;
    if (j->ncols) { /* columns [begin, end) of B, bias and C */
      a->N = end - begin;
      a->b += a->tb ? begin * a->K : begin;
      if (a->bias) a->bias += begin;
      a->c += begin;
      p.n0 = begin;
    } else {
      a->M = end - begin;
      a->a += a->ta ? begin : begin * a->K;
      a->c += begin * a->N;
    }
    st = mm_chunk(j->c, &p, &declined, &nan);
  }
  if (declined) __atomic_store_n(&j->declined, 1, __ATOMIC_RELAXED);
  if (nan) __atomic_store_n(&j->nan, 1, __ATOMIC_RELAXED);
  sm_status *none = NULL;
  if (st && !__atomic_compare_exchange_n(&j->err, &none, st, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    sm_status_free(st);
}

static sm_status *run_split(split_job *j, sm_kctx *ctx, int64_t n, double macs, int *declined) {
  /* a oneDNN call cannot stop halfway: check before (ctx NULL: a caller outside a run, one thread) */
  sm_status *st = ctx ? sm__kctx_check_stop(ctx) : NULL;
  if (st) return st;
  /* one image's convolution of 16 output pixels or fewer (slices of its filters, sm__dnnl_conv_split)
   * with under 64K floats of filters splits from twice the usual threshold: MobileNetV2 b1's
   * 393K-multiply-add 1x1s at 4x4 (64 x 384 filters) ran no faster in two slices, and the call
   * 0.593 / 0.596 / 0.575 -> 0.572 / 0.584 / 0.557 ms with them on one thread; with larger filters
   * (DenseNet121 b1's 1x1s of 512-1024 x 128 at 2x2, bound by reading them) two slices read them
   * twice as fast: 2.96 -> 3.02 ms without (bench/RESULTS.md, session 15, h2) */
  double min_macs = SM_NN_PAR_MIN_MACS;
  if (j->conv && j->conv->N == 1 && j->conv->OH * j->conv->OW <= 16 &&
      (double)j->conv->KH * (double)j->conv->KW * (double)j->conv->C * (double)j->conv->Cout < 65536.0)
    min_macs *= 2;
  sm_threadpool *pool = macs < min_macs || !ctx ? NULL : sm__kctx_pool(ctx);
  int64_t pieces = sm__threadpool_nthreads(pool);
  if (pieces > n) pieces = n;
  j->n = n;
  j->per = (n + pieces - 1) / pieces;
  if (j->couts || j->ncols) j->per = (j->per + 15) / 16 * 16; /* whole vectors of channels / columns */
  /* an addend summed in place (it is the output): a piece that ran cannot be undone, so every
   * piece's primitive is had first, and a decline leaves the output untouched */
  for (int64_t b = 0; j->conv && j->conv->addend && j->conv->addend == j->conv->y && b < n; b += j->per) {
    conv_piece a;
    prim *pr;
    pack *pk;
    piece_conv(j, b, b + j->per < n ? b + j->per : n, &a);
    int64_t key[KEY_LEN];
    conv_key(&a, key);
    if ((st = acquire(j->c, key, build_conv, &a, a.a.filt, a.a.filt_uid, &pr, &pk))) return st;
    if (!pr) {
      *declined = 1;
      return NULL;
    }
    release(j->c, pr, pk);
  }
  sm__parallel_for(pool, (n + j->per - 1) / j->per, 1, split_chunk, j);
  *declined = j->declined;
  return j->err;
}

/* ---- convolution ------------------------------------------------------------------------------ */

/* Whether a piece runs in oneDNN's blocked nChw16c layout (its jit:avx512_core kernel, the input
 * reordered in and the output back per call) rather than NHWC (its brgconv): spatial (3x3-like)
 * convolutions of 8+ images over 512+ input channels at 4x4 output pixels or fewer, channels in
 * whole blocks of 16. There one thread's time (bench/bench_layout.c, bench/RESULTS.md "nChw16c")
 * was 0.49-0.66x NHWC's, the reorders 1-4% of it: VGG16's 3x3 512 at 4x4, 16 images, 12.6 -> 6.2
 * ms; ResNet50's 3x3 512 at 2x2, 8 images, 1.72 -> 1.14 ms. NHWC was as fast or faster at one
 * image, over 256 channels (ResNet50's 3x3 256 at 4x4: 0.96x, and 1.18x for a slice of 128
 * filters), at 8x8 and up (1.3x), and for 1x1 (where the reorders cost more than the kernel
 * gains). SM_DNNL_BLOCKED=0 turns it off (for A/B). */
static int im2col_conv(const sm__dnnl_conv_args *a);
static int blocked8_conv(const sm__dnnl_conv_args *a);
static int blocked_conv(const sm__dnnl_conv_args *a) {
  if (!cpu_avx512()) return blocked8_conv(a);
  if (a->G != 1 || a->KH * a->KW < 2 || a->N < 8 || a->C < 512 || a->OH * a->OW > 16 || a->C % 16 || a->Cout % 16)
    return 0;
  return !blocked_off;
}

/* Without AVX-512 (oneDNN's jit:avx2 kernels): nChw8c where it was faster than NHWC, its reorders
 * in and out included (bench/bench_conv3x3.c, one thread, bench/RESULTS.md "Session 18 - a1"):
 * spatial convolutions of 8+ images of 64+ -> 64+ channels at 16x16 output pixels or fewer (VGG16's
 * 3x3 64->128 and 128 @16x16 0.76x / 0.87x NHWC's time, ResNet50's 3x3 64 @16 0.89x, 128 @8
 * 0.79x). At 32x32 (VGG16's 64 @32) as fast as NHWC, at one image within 5%; what im2col_conv
 * takes is not blocked. SM_DNNL_BLOCKED8=0 (or SM_DNNL_BLOCKED=0) turns it off. */
static int blocked8_conv(const sm__dnnl_conv_args *a) {
  if (a->G != 1 || a->KH * a->KW < 2 || a->N < 8 || a->C < 64 || a->Cout < 64 || a->OH * a->OW > 256 || a->C % 8 ||
      a->Cout % 8 || blocked8_off || blocked_off)
    return 0;
  return !im2col_conv(a);
}

/* The reorders of a blocked primitive (pr->src/dst nChw16c): its NHWC usrc/udst in and out, the
 * way out adding to what udst holds when sum (the residual: (product + bias) + addend, the bits of
 * the unfused BiasAdd then AddV2; the jit kernel's own sum post-op gave other bits). 0 on failure
 * (*oom set when out of memory). */
static int make_reorders(prim *pr, const dnnl_memory_desc_t *usrc, const dnnl_memory_desc_t *udst, int sum, int *oom) {
  pr->usrc = *usrc;
  pr->udst = *udst;
  const dnnl_memory_desc_t *from[2] = {usrc, &pr->dst}, *to[2] = {&pr->src, udst};
  dnnl_primitive_t *r[2] = {&pr->rin, &pr->rout};
  for (int i = 0; i < 2; i++) {
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = dnnl_success;
    if (i == 1 && sum) { /* (library-managed scratchpad: execute passes none to a reorder) */
      dnnl_post_ops_t po = NULL;
      s = D.dnnl_primitive_attr_create(&attr);
      if (s == dnnl_success) s = D.dnnl_post_ops_create(&po);
      if (s == dnnl_success) s = D.dnnl_post_ops_append_sum(po, 1.0f);
      if (s == dnnl_success) s = D.dnnl_primitive_attr_set_post_ops(attr, po);
      if (po) D.dnnl_post_ops_destroy(po);
    }
    if (s == dnnl_success) s = D.dnnl_reorder_primitive_desc_create(&rpd, from[i], engine, to[i], engine, attr);
    if (s == dnnl_success) s = D.dnnl_primitive_create(r[i], rpd);
    if (rpd) D.dnnl_primitive_desc_destroy(rpd);
    if (attr) D.dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) {
      *oom = s == dnnl_out_of_memory;
      return 0;
    }
  }
  pr->blocked = 1;
  pr->act_after = sum;
  return 1;
}

/* A Relu-like activation (oneDNN's max(x, 0)) after an addend summed in place (see NAN_CHECK). */
static int inplace_relu(const sm__dnnl_conv_args *a) {
  int kills =
      a->act == SM_NN_ACT_RELU || a->act == SM_NN_ACT_RELU6 || (a->act == SM_NN_ACT_LEAKY_RELU && a->alpha == 0);
  return NAN_CHECK && !relu_nan_off && kills && a->addend && a->addend == a->y;
}

static sm_status *build_conv(const void *args, prim **out) {
  const conv_piece *p = args;
  const sm__dnnl_conv_args *a = &p->a;
  *out = NULL;
  /* nChw16c first where it pays, NHWC when oneDNN has no fast kernel for it */
  for (int blocked = blocked_conv(a); blocked >= 0; blocked--) {
    sm_status *st = build_conv_in(p, !blocked ? dnnl_nhwc : cpu_avx512() ? dnnl_nChw16c : dnnl_nChw8c, out);
    if (st || *out) return st;
  }
  return NULL;
}

static sm_status *build_conv_in(const conv_piece *p, dnnl_format_tag_t tag, prim **out) {
  const sm__dnnl_conv_args *a = &p->a;
  *out = NULL;
  dnnl_memory_desc_t src, dst, usrc, udst, bias, wany, wuser;
  dnnl_dims_t sd = {a->N, a->C, a->H, a->W}, dd = {a->N, a->Cout, a->OH, a->OW}, bd = {a->Cout};
  int ok = D.dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, tag) == dnnl_success &&
           D.dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, tag) == dnnl_success &&
           D.dnnl_memory_desc_init_by_tag(&usrc, 4, sd, dnnl_f32, dnnl_nhwc) == dnnl_success &&
           D.dnnl_memory_desc_init_by_tag(&udst, 4, dd, dnnl_f32, dnnl_nhwc) == dnnl_success &&
           D.dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a) == dnnl_success;
  if (a->G == 1) { /* TF's HWIO [kh, kw, i, o] is oneDNN's hwio of dims (o, i, h, w), o of ld */
    dnnl_dims_t wd = {a->Cout, a->C, a->KH, a->KW}, ws = {1, p->ldo, a->KW * a->C * p->ldo, a->C * p->ldo};
    ok = ok && D.dnnl_memory_desc_init_by_tag(&wany, 4, wd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
         D.dnnl_memory_desc_init_by_strides(&wuser, 4, wd, dnnl_f32, ws) == dnnl_success;
  } else { /* output channel g * (Cout/G) + o: [kh, kw, i, g, o] is hwigo of dims (g, o, i, h, w) */
    dnnl_dims_t wd = {a->G, a->Cout / a->G, a->C / a->G, a->KH, a->KW};
    ok = ok && D.dnnl_memory_desc_init_by_tag(&wany, 5, wd, dnnl_f32, dnnl_format_tag_any) == dnnl_success &&
         D.dnnl_memory_desc_init_by_tag(&wuser, 5, wd, dnnl_f32, dnnl_hwigo) == dnnl_success;
  }
  /* oneDNN's dilation counts the gaps (TF's - 1); the trailing pad is what makes OH come out
   * (negative where TF's VALID/SAME drop the last input rows) */
  dnnl_dims_t strides = {a->sh, a->sw}, dil = {a->dh - 1, a->dw - 1}, pl = {a->pt, a->pl};
  dnnl_dims_t pr = {(a->OH - 1) * a->sh + (a->KH - 1) * a->dh + 1 - a->H - a->pt,
                    (a->OW - 1) * a->sw + (a->KW - 1) * a->dw + 1 - a->W - a->pl};
  dnnl_convolution_desc_t cd;
  /* bias_after: a second build where the first's kernel is bias_first (non-AVX-512 CPUs): the
   * product alone, the bias, addend and activation added after it (execute, conv_chunk) */
  for (int bias_after = 0;; bias_after = 1) {
    if (!ok || D.dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src,
                                                            &wany, a->bias && !bias_after ? &bias : NULL, &dst, strides,
                                                            dil, pl, pr) != dnnl_success)
      return NULL;
    /* blocked with an addend: the sum (and so the activation after it) outside the primitive; an
     * addend summed in place with a Relu: the activation after the product (NAN_CHECK's redo
     * would have lost the addend) */
    int bsum = tag != dnnl_nhwc && a->addend && !bias_after, after = !bias_after && inplace_relu(a);
    int act = bias_after || bsum || after || !act_is_post_op(a->act) ? SM_NN_ACT_NONE : a->act;
    sm_status *st = make_prim(&cd, act, a->alpha, a->addend && !bsum && !bias_after, &wuser,
                              a->KH * a->KW * (a->C / a->G), out);
    if (!st && *out && !bias_after && (*out)->bias_first && (a->bias || a->addend)) {
      prim_unref(*out);
      *out = NULL;
      continue;
    }
    if (!st && *out) (*out)->bias_after = bias_after;
    int oom = 0;
    if (!st && *out && tag != dnnl_nhwc && !make_reorders(*out, &usrc, &udst, bsum, &oom)) {
      prim_unref(*out);
      *out = NULL;
      if (oom) st = sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM in oneDNN (reorders)");
    }
    if (!st && *out && after) (*out)->act_after = 1;
    return st;
  }
}

/* o0 too: each slice of the filters has its own slot, so the slices' packs do not displace each
 * other (a slot packs one weight pointer) */
static void conv_key(const conv_piece *p, int64_t key[KEY_LEN]) {
  const sm__dnnl_conv_args *a = &p->a;
  int64_t k[KEY_LEN] = {1, a->N, a->H, a->W, a->C, a->KH, a->KW, a->Cout, a->G, a->bias != NULL, a->OH, a->OW,
                        a->pt, a->pl, a->addend ? 1 + (a->addend == a->y) : 0, a->act, p->ldo, p->o0};
  memcpy(key, k, sizeof k);
}

static sm_status *conv_chunk(sm__dnnl_cache *c, const conv_piece *p, int *declined, int *nan) {
  const sm__dnnl_conv_args *a = &p->a;
  int64_t key[KEY_LEN];
  conv_key(p, key);
  prim *pr;
  pack *pk;
  sm_status *st = acquire(c, key, build_conv, p, a->filt, a->filt_uid, &pr, &pk);
  if (st || !pr) {
    *declined = !st;
    return st;
  }
  int64_t rows = a->N * a->OH * a->OW;
  /* a bias_after primitive with an addend: the product alone into a dense copy (the addend may be
   * a->y), then row by row (product + bias) + addend and the activation, the order of BiasAdd,
   * AddV2 and the activation's op */
  int sep = pr->bias_after && a->addend, sum_in_dst = a->addend && !pr->bias_after;
  if (p->ldo != a->Cout || sep) { /* a slice of the filters: oneDNN's fast kernels want a dense output */
    size_t row = (size_t)a->Cout * sizeof *a->y;
    float *t = sm__alloc((size_t)rows * row);
    if (!t) {
      release(c, pr, pk);
      return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes for a oneDNN output slice",
                           (size_t)rows * row);
    }
    for (int64_t r = 0; sum_in_dst && r < rows; r++) memcpy(t + r * a->Cout, a->addend + r * p->ldo, row);
    st = execute(c, pr, pk, NULL, a->x, sep ? NULL : a->bias, t, rows, a->Cout, sep ? SM_NN_ACT_NONE : a->act,
                 a->alpha, nan);
    for (int64_t r = 0; !st && sep && r < rows; r++) {
      const float *tr = t + r * a->Cout, *ar = a->addend + r * p->ldo;
      float *yr = a->y + r * p->ldo;
      if (a->bias)
        for (int64_t i = 0; i < a->Cout; i++) yr[i] = (tr[i] + a->bias[i]) + ar[i];
      else
        for (int64_t i = 0; i < a->Cout; i++) yr[i] = tr[i] + ar[i];
      if (a->act != SM_NN_ACT_NONE) sm__nn_bias_act_f32(yr, yr, 1, a->Cout, NULL, a->act, a->alpha);
    }
    for (int64_t r = 0; !st && !sep && r < rows; r++) memcpy(a->y + r * p->ldo, t + r * a->Cout, row);
    sm__free(t);
    return st;
  }
  /* the sum post-op adds the product to what dst holds: the piece's addend (a declined piece's
   * caller rewrites every element, so a copy made for a sibling piece does no harm) */
  if (a->addend && a->addend != a->y) memcpy(a->y, a->addend, (size_t)(rows * a->Cout) * sizeof *a->y);
  return execute(c, pr, pk, NULL, a->x, a->bias, a->y, rows, a->Cout, a->act, a->alpha, nan);
}

/* Whether a convolution runs as im2col + one oneDNN matmul (its weights the HWIO filter as it is,
 * [KH*KW*C, Cout], packed once like a Dense layer's) rather than oneDNN's convolution: on a CPU
 * without AVX-512, where oneDNN 2.6 convolves with its jit:avx2 kernel at 50-70 GFLOP/s a thread
 * and its gemm reaches 65-85 (bench/bench_conv3x3.c, bench/RESULTS.md "Session 18 - a1"): the
 * spatial convolutions of 128+ x 256+ channels over 128+ output pixels, or 64+ with 1M+ floats of
 * filters (VGG16's 3x3 from 128->256 @8x8 and ResNet50's 3x3 256 and 512 at batch 16; one thread
 * 1.1-1.7x faster). Fewer channels or
 * pixels stay convolutions (gemm's panels are too thin there), as does every AVX-512 CPU (its
 * kernels met issue #15 already). SM_DNNL_IM2COL=0 / 1 forces (A/B). */
static int im2col_conv(const sm__dnnl_conv_args *a) {
  if (a->G != 1 || a->KH * a->KW < 2 || im2col_force == 0) return 0;
  double rows = (double)a->N * (double)a->OH * (double)a->OW, k = (double)a->KH * (double)a->KW * (double)a->C;
  if (rows * k * sizeof(float) > 256.0 * 1024 * 1024) return 0; /* the patch matrix is one buffer */
  if (im2col_force == 1) return 1;
  if (cpu_avx512()) return 0;
  /* 128+ patch rows, or 64+ with 1M+ floats of filters (the matmul then splits its columns, each
   * thread a half of them): 64 rows of 128-256 x 256 filters (VGG16 b1's block3) split in rows of
   * 32, 2-3 % slower than the convolution over the whole network */
  double filt = k * (double)a->Cout;
  return (double)a->C * (double)a->Cout >= 128.0 * 256.0 && (rows >= 128 || (rows >= 64 && filt >= 1048576.0));
}

typedef struct im2col_job {
  const sm__dnnl_conv_args *a;
  float *col;
} im2col_job;

/* The patch rows [begin, end) of output pixels (n, oy, ox): [kh][kw][c], zeros in the padding. */
static void im2col_rows(void *ctx, int64_t begin, int64_t end) {
  const im2col_job *j = ctx;
  const sm__dnnl_conv_args *a = j->a;
  int64_t k = a->KH * a->KW * a->C;
  size_t cb = (size_t)a->C * sizeof(float);
  for (int64_t r = begin; r < end; r++) {
    int64_t n = r / (a->OH * a->OW), oy = r / a->OW % a->OH, ox = r % a->OW;
    float *d = j->col + r * k;
    for (int64_t ky = 0; ky < a->KH; ky++) {
      int64_t iy = oy * a->sh - a->pt + ky * a->dh;
      for (int64_t kx = 0; kx < a->KW; kx++, d += a->C) {
        int64_t ix = ox * a->sw - a->pl + kx * a->dw;
        if (iy < 0 || iy >= a->H || ix < 0 || ix >= a->W) memset(d, 0, cb);
        else memcpy(d, a->x + ((n * a->H + iy) * a->W + ix) * a->C, cb);
      }
    }
  }
}

/* im2col_conv's way: the patches gathered over the pool into one scratch buffer, then the matmul
 * (bias and activation its post-ops, split over the pool as any other, sm__dnnl_matmul). */
static sm_status *conv_im2col(sm__dnnl_cache *c, const sm__dnnl_conv_args *a, sm_kctx *ctx, int *declined) {
  int64_t rows = a->N * a->OH * a->OW, k = a->KH * a->KW * a->C;
  size_t bytes = (size_t)rows * (size_t)k * sizeof(float);
  sm_status *st = NULL;
  float *col = ctx ? sm__kctx_scratch(ctx, bytes, &st) : sm__alloc(bytes);
  if (!col)
    return st ? st : sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes for im2col patches", bytes);
  im2col_job j = {a, col};
  sm__parallel_for(ctx ? sm__kctx_pool(ctx) : NULL, rows, 16, im2col_rows, &j);
  /* a residual Add: the product alone (into a copy when the addend is the output), then row by
   * row (product + bias) + addend and the activation, the unfused BiasAdd / AddV2 / activation's
   * order and bits */
  size_t obytes = (size_t)rows * (size_t)a->Cout * sizeof(float);
  float *t = !a->addend || a->addend != a->y ? a->y : ctx ? sm__kctx_scratch(ctx, obytes, &st) : sm__alloc(obytes);
  if (!t) {
    if (ctx) sm__kctx_scratch_free(ctx, col);
    else sm__free(col);
    return st ? st : sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes for a product", obytes);
  }
  sm__dnnl_mm_args m = {rows,         a->Cout, k,       k, 0, 0, col, a->filt, a->addend ? NULL : a->bias, a->filt_uid,
                        t, a->addend ? SM_NN_ACT_NONE : a->act, a->alpha};
  st = sm__dnnl_matmul(c, &m, ctx, declined);
  for (int64_t r = 0; !st && !*declined && a->addend && r < rows; r++) {
    const float *tr = t + r * a->Cout, *ar = a->addend + r * a->Cout;
    float *yr = a->y + r * a->Cout;
    if (a->bias)
      for (int64_t i = 0; i < a->Cout; i++) yr[i] = (tr[i] + a->bias[i]) + ar[i];
    else
      for (int64_t i = 0; i < a->Cout; i++) yr[i] = tr[i] + ar[i];
    if (a->act != SM_NN_ACT_NONE) sm__nn_bias_act_f32(yr, yr, 1, a->Cout, NULL, a->act, a->alpha);
  }
  if (t != a->y) {
    if (ctx) sm__kctx_scratch_free(ctx, t);
    else sm__free(t);
  }
  if (ctx) sm__kctx_scratch_free(ctx, col);
  else sm__free(col);
  return st;
}

/* ---- Winograd F(2x2 / 3x3, 3x3) (nn_winograd_avx2.c) ---------------------------------------------- */

/* The tile of a Winograd convolution: F(3x3, 3x3) (points +-3/2, +-1/4, channel sums in blocks of 32)
 * over 24x24+ output, else F(2x2, 3x3). One thread (bench_conv3x3 -DWINO, bench/RESULTS.md "Session 19
 * - c7"): F(3x3) 0.80-0.90x F(2x2)'s time at 56x56, 32x32, 28x28 (64-128 channels), within noise or
 * slower at 16x16 and below (its 5x5 tiles' overhang and dearer transforms eat the 25 / 36 products
 * for 4 outputs' 16); its error 0.6e-6..1.7e-6 of the range on those layers (2.9e-6 at most on any
 * layer tried), oneDNN's direct sum's 0.7e-6..2.5e-6. */
static int wino_tile(const sm__dnnl_conv_args *a) {
  if (wino_m_force) return wino_m_force;
  return a->OH >= 24 && a->OW >= 24 ? 3 : 2;
}

/* Whether a convolution runs as Winograd (F(2x2) or F(3x3), wino_tile) rather than oneDNN: a 3x3,
 * stride 1, dilation 1, one group, on an AVX2 + FMA CPU without AVX-512 (oneDNN 2.6's own Winograd is AVX-512 only), of
 * 64+ -> 32+ channels, with 8x8+ output or 8+ images of 2x2+ (one tile or four an image stream all
 * the transformed filters for it). One thread (bench/bench_conv3x3.c -DWINO, bench/RESULTS.md
 * "Session 18 - b1"): 1.4-1.8x faster than the best of oneDNN NHWC / nChw8c / im2col on every
 * VGG16 / ResNet50 3x3 of 64+ channels at b16 and over 8x8+ at b1; slower at one image of 4x4 or
 * 2x2 x 256-512 channels and over 3 input channels. Filters from 32: DenseNet121's growth 3x3s (128 ->
 * 32 channels, 53-66% of its b16 step time) took 0.42x oneDNN's time at b16 on one thread (sums of step
 * minima 44.9 vs 107.7 ms, load 14-15; bench/RESULTS.md, session 21, f8). Its error vs a float64 sum is below oneDNN's
 * (~1e-6 of the output range). F(4x4, 3x3) (SM_NN_WINOGRAD_TILE=4) is a further 1.3-1.5x faster but,
 * even with session 19's points and blocked sums, 3e-6..9e-6 of the range off: not a default.
 * SM_NN_WINOGRAD=0 / 1 forces (A/B; the tests pass with =1). */
static int wino_conv(const sm__dnnl_conv_args *a) {
  if (wino_force == 0 || a->G != 1 || a->KH != 3 || a->KW != 3 || a->sh != 1 || a->sw != 1 || a->dh != 1 ||
      a->dw != 1 || !sm__wino_cpu_ok())
    return 0;
  if ((double)sm__wino_packed_floats(wino_tile(a), a->C, a->Cout) * sizeof(float) > 512.0 * 1024 * 1024) return 0;
  if (wino_force == 1) return 1;
  if (cpu_avx512()) return 0;
  return a->C >= 64 && a->Cout >= 32 && a->OH >= 2 && a->OW >= 2 && ((a->OH >= 8 && a->OW >= 8) || a->N >= 8);
}

/* the transformed filter of a (packed at the first call, again when the filter tensor changes) */
static sm_status *wino_acquire(sm__dnnl_cache *c, const sm__dnnl_conv_args *a, int wino_m, wpack **out) {
  pthread_mutex_lock(&c->mu);
  wpack *w = c->wino;
  if (w && w->m == wino_m && w->wptr == a->filt && w->wuid == a->filt_uid && w->C == a->C && w->K == a->Cout) {
    w->refs++;
    pthread_mutex_unlock(&c->mu);
    *out = w;
    return NULL;
  }
  pthread_mutex_unlock(&c->mu);
  size_t bytes = sm__wino_packed_floats(wino_m, a->C, a->Cout) * sizeof(float);
  w = sm__calloc(sizeof *w);
  float *U = w ? sm__alloc(bytes) : NULL;
  if (!U) {
    sm__free(w);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes for Winograd filters", bytes);
  }
  sm__wino_pack(wino_m, a->filt, a->C, a->Cout, U);
  *w = (wpack){2, wino_m, a->filt, a->filt_uid, a->C, a->Cout, U};
  pthread_mutex_lock(&c->mu);
  wpack *old = c->wino;
  c->wino = w;
  wpack_unref(old);
  pthread_mutex_unlock(&c->mu);
  *out = w;
  return NULL;
}

typedef struct wino_job {
  const sm__wino_args *w;
  int64_t tiles, T, KB, kpieces;
  int oom;
} wino_job;

/* pieces [begin, end): tile block i / kpieces, output-channel slice i % kpieces; the scratch is the
 * thread's (thread_mem, grown here) */
static void wino_pieces(void *ctx, int64_t begin, int64_t end) {
  wino_job *j = ctx;
  thread_mem *t = thread_mem_get();
  size_t need = sm__wino_scratch_floats(j->w->C, j->w->K, j->T) * sizeof(float);
  if (t && need > t->scratch_cap) {
    free(t->scratch);
    t->scratch = malloc(need);
    t->scratch_cap = t->scratch ? need : 0;
  }
  if (!t || !t->scratch) {
    __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t i = begin; i < end; i++) {
    int64_t b = i / j->kpieces, kp = i % j->kpieces, t0 = b * j->T, t1 = t0 + j->T < j->tiles ? t0 + j->T : j->tiles;
    sm__wino_run(j->w, t0, t1, kp * j->KB / j->kpieces, (kp + 1) * j->KB / j->kpieces, j->T, t->scratch);
  }
}

static sm_status *conv_wino(sm__dnnl_cache *c, const sm__dnnl_conv_args *a, sm_kctx *ctx) {
  wpack *w;
  int m = wino_tile(a);
  sm_status *st = wino_acquire(c, a, m, &w);
  if (st) return st;
  int64_t cb = wino_cb_force >= 0 ? wino_cb_force : m == 2 ? 0 : 32;
  sm__wino_args wa = {m, a->N, a->H, a->W, a->C, a->OH, a->OW, a->Cout, a->pt, a->pl, a->x, w->U, a->bias, a->addend,
                      a->filt, a->y, a->act, a->alpha, cb};
  sm_threadpool *pool = ctx ? sm__kctx_pool(ctx) : NULL;
  int64_t nth = sm__threadpool_nthreads(pool), tiles = sm__wino_tiles(&wa), T = sm__wino_block(a->C, a->Cout);
  if (tiles < T) T = (tiles + 5) / 6 * 6;
  int64_t nb = (tiles + T - 1) / T, KB = (a->Cout + 15) / 16;
  /* few blocks, or a number the threads do not share evenly: each block's output channels in slices */
  int64_t kp = nb >= 4 * nth || nb % nth == 0 ? 1 : nth < KB ? nth : KB;
  wino_job j = {&wa, tiles, T, KB, kp, 0};
  sm__parallel_for(pool, nb * kp, 1, wino_pieces, &j);
  pthread_mutex_lock(&c->mu);
  wpack_unref(w);
  pthread_mutex_unlock(&c->mu);
  if (j.oom) return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating Winograd scratch");
  return NULL;
}

sm_status *sm__dnnl_conv(sm__dnnl_cache *c, const sm__dnnl_conv_args *a, sm_kctx *ctx, int *declined) {
  *declined = 1;
  if (!c || !loaded) return NULL;
  if (wino_conv(a)) {
    *declined = 0;
    return conv_wino(c, a, ctx);
  }
  if (im2col_conv(a)) {
    sm_status *st = conv_im2col(c, a, ctx, declined);
    if (st || !*declined) return st;
  }
  int couts = sm__dnnl_conv_split(a) == 'c';
  split_job j = {c, 0, 0, a->N == 1 && !couts, couts, 0, a, NULL, NULL, NULL, 0, 0};
  double macs = (double)a->N * (double)a->OH * (double)a->OW * (double)a->Cout * (double)a->KH * (double)a->KW *
                (double)(a->C / a->G);
  int64_t n = couts ? a->Cout : a->N == 1 ? a->OH : a->N;
  sm_status *st = run_split(&j, ctx, n, macs, declined);
  if (st || *declined || !j.nan) return st;
  /* NaN met the Relu post-op (NAN_CHECK): the product again without it, then the own Relu loop */
  sm__dnnl_conv_args b = *a;
  b.act = SM_NN_ACT_NONE;
  split_job j2 = {c, 0, 0, a->N == 1 && !couts, couts, 0, &b, NULL, NULL, NULL, 0, 0};
  st = run_split(&j2, ctx, n, macs, declined);
  if (!st && !*declined) sm__nn_bias_act_f32(a->y, a->y, a->N * a->OH * a->OW, a->Cout, NULL, a->act, a->alpha);
  return st;
}

/* ---- matrix product --------------------------------------------------------------------------- */

static sm_status *build_mm(const void *args, prim **out) {
  const mm_piece *p = args;
  const sm__dnnl_mm_args *a = &p->a;
  *out = NULL;
  dnnl_memory_desc_t src, wany, wuser, bias, dst;
  dnnl_dims_t ad = {a->M, a->K}, as = {a->ta ? 1 : a->lda, a->ta ? a->lda : 1};
  dnnl_dims_t bd = {a->K, a->N}, bs = {a->tb ? 1 : p->ldb, a->tb ? a->K : 1};
  dnnl_dims_t cd = {a->M, a->N}, biasd = {1, a->N};
  if (D.dnnl_memory_desc_init_by_strides(&src, 2, ad, dnnl_f32, as) != dnnl_success ||
      D.dnnl_memory_desc_init_by_strides(&wuser, 2, bd, dnnl_f32, bs) != dnnl_success ||
      D.dnnl_memory_desc_init_by_tag(&wany, 2, bd, dnnl_f32, dnnl_format_tag_any) != dnnl_success ||
      D.dnnl_memory_desc_init_by_tag(&bias, 2, biasd, dnnl_f32, dnnl_ab) != dnnl_success ||
      D.dnnl_memory_desc_init_by_tag(&dst, 2, cd, dnnl_f32, dnnl_ab) != dnnl_success)
    return NULL;
  dnnl_matmul_desc_t md;
  if (D.dnnl_matmul_desc_init(&md, &src, &wany, a->bias ? &bias : NULL, &dst) != dnnl_success) return NULL;
  return make_prim(&md, act_is_post_op(a->act) ? a->act : SM_NN_ACT_NONE, a->alpha, 0, &wuser, a->K, out);
}

static sm_status *mm_chunk(sm__dnnl_cache *c, const mm_piece *p, int *declined, int *nan) {
  const sm__dnnl_mm_args *a = &p->a;
  int64_t key[KEY_LEN] = {2, a->M, a->N, a->K, a->ta, a->tb, a->bias != NULL, a->lda, p->ldb, p->n0, a->act};
  prim *pr;
  pack *pk;
  sm_status *st = acquire(c, key, build_mm, p, a->b, a->b_uid, &pr, &pk);
  if (st || !pr) {
    *declined = !st;
    return st;
  }
  if (p->ldb == a->N) return execute(c, pr, pk, NULL, a->a, a->bias, a->c, a->M, a->N, a->act, a->alpha, nan);
  /* a slice of the columns: into a dense buffer, then into place */
  size_t row = (size_t)a->N * sizeof *a->c;
  float *t = sm__alloc((size_t)a->M * row);
  if (!t) {
    release(c, pr, pk);
    return sm_status_new(SM_RESOURCE_EXHAUSTED, "OOM when allocating %zu bytes for a oneDNN output slice",
                         (size_t)a->M * row);
  }
  st = execute(c, pr, pk, NULL, a->a, a->bias, t, a->M, a->N, a->act, a->alpha, nan);
  for (int64_t r = 0; !st && r < a->M; r++) memcpy(a->c + r * p->ldb, t + r * a->N, row);
  sm__free(t);
  return st;
}

/* A product of few rows (M <= 64) with a large B (4 MB and up: a Dense layer's weights at small
 * batches, VGG16's 4096 x 4096) is split over B's columns: each thread streams its share of B
 * instead of all of it (by rows, one row was one piece: the whole product on one thread).
 * SM_DNNL_SPLIT=rows keeps rows (for A/B, bench/RESULTS.md). */
static int split_ncols(const sm__dnnl_mm_args *a) {
  return a->M <= 64 && a->N >= 128 && (double)a->K * (double)a->N >= 1048576.0 && split_force != 'r';
}

/* Whether a product goes to the caller's OpenBLAS sgemm (and the library's bias / activation pass,
 * sm__nn_bias_act_f32) rather than oneDNN: on CPUs without AVX-512, oneDNN's f32 matmul is its
 * gemm:jit, which at up to 256 rows a piece and an output at least twice as wide as the inner
 * dimension (K >= 128) ran 1.2-1.8x slower than OpenBLAS on the AVX2 VM (bench/bench_mm_shapes.c,
 * one thread: 64 x 256 x 1024, the Transformer's FFN-up piece at batch 1, 700 against 435 us; 128
 * x 256 x 512 479 / 393; 64 x 768 x 3072 7.9 / 6.7 ms; from 384 rows a piece, or N < 2K, level or
 * oneDNN ahead: bench/RESULTS.md, session 19 c6). Up to 512 rows: each of two threads' pieces
 * 256. The AVX-512 kernels (brgemm) are not this path. SM_DNNL_MM_WIDE=1 keeps them on oneDNN
 * (for A/B). */
static int mm_wide_to_blas(const sm__dnnl_mm_args *a) {
  return !cpu_avx512() && !mm_wide_keep && !a->ta && !a->tb && a->M <= 512 && a->K >= 128 && a->N >= 2 * a->K;
}

sm_status *sm__dnnl_matmul(sm__dnnl_cache *c, const sm__dnnl_mm_args *a, sm_kctx *ctx, int *declined) {
  *declined = 1;
  if (!c || !loaded || mm_wide_to_blas(a)) return NULL;
  int ncols = split_ncols(a);
  split_job j = {c, 0, 0, 0, 0, ncols, NULL, a, NULL, NULL, 0, 0};
  double macs = (double)a->M * (double)a->N * (double)a->K;
  sm_status *st = run_split(&j, ctx, ncols ? a->N : a->M, macs, declined);
  if (st || *declined || !j.nan) return st;
  /* NaN met the Relu post-op (NAN_CHECK): the product again without it, then the own Relu loop */
  sm__dnnl_mm_args b = *a;
  b.act = SM_NN_ACT_NONE;
  split_job j2 = {c, 0, 0, 0, 0, ncols, NULL, &b, NULL, NULL, 0, 0};
  st = run_split(&j2, ctx, ncols ? a->N : a->M, macs, declined);
  if (!st && !*declined) sm__nn_bias_act_f32(a->c, a->c, a->M, a->N, NULL, a->act, a->alpha);
  return st;
}

/* ---- batched product of two activations (Einsum) ------------------------------------------- */

static sm_status *build_bmm(const void *args, prim **out) {
  const sm__dnnl_bmm_args *a = args;
  *out = NULL;
  int nd = a->nbd + 2;
  dnnl_dims_t ad, bd, cd, as, bs, cs;
  for (int i = 0; i < a->nbd; i++) ad[i] = bd[i] = cd[i] = a->bd[i];
  ad[nd - 2] = a->M, ad[nd - 1] = a->K;
  bd[nd - 2] = a->K, bd[nd - 1] = a->N;
  cd[nd - 2] = a->M, cd[nd - 1] = a->N;
  for (int i = 0; i < nd; i++) as[i] = a->sa[i], bs[i] = a->sb[i], cs[i] = a->sc[i];
  dnnl_memory_desc_t src, wei, dst;
  dnnl_matmul_desc_t md;
  if (D.dnnl_memory_desc_init_by_strides(&src, nd, ad, dnnl_f32, as) != dnnl_success ||
      D.dnnl_memory_desc_init_by_strides(&wei, nd, bd, dnnl_f32, bs) != dnnl_success ||
      D.dnnl_memory_desc_init_by_strides(&dst, nd, cd, dnnl_f32, cs) != dnnl_success ||
      D.dnnl_matmul_desc_init(&md, &src, &wei, NULL, &dst) != dnnl_success)
    return NULL;
  return make_prim(&md, SM_NN_ACT_NONE, 0.0f, 0, &wei, a->K, out);
}

static sm_status *bmm_chunk(sm__dnnl_cache *c, const sm__dnnl_bmm_args *a, int *declined) {
  int64_t key[KEY_LEN] = {3, a->nbd, a->bd[0], a->nbd > 1 ? a->bd[1] : 0, a->M, a->N, a->K};
  for (int i = 0; i < a->nbd + 2; i++) key[7 + i] = a->sa[i], key[11 + i] = a->sb[i], key[15 + i] = a->sc[i];
  prim *pr;
  pack *pk;
  sm_status *st = acquire(c, key, build_bmm, a, NULL, 0, &pr, &pk);
  if (st || !pr) {
    *declined = !st;
    return st;
  }
  int nan = 0; /* no post-op */
  return execute(c, pr, pk, a->b, a->a, NULL, a->c, 0, 0, SM_NN_ACT_NONE, 0.0f, &nan);
}

sm_status *sm__dnnl_bmm(sm__dnnl_cache *c, const sm__dnnl_bmm_args *a, sm_kctx *ctx, int *declined) {
  *declined = 1;
  if (!c || !loaded || a->nbd < 1 || a->nbd > 2) return NULL;
  split_job j = {c, 0, 0, 0, 0, 0, NULL, NULL, a, NULL, 0, 0};
  double macs = (double)a->bd[0] * (a->nbd > 1 ? (double)a->bd[1] : 1.0) * (double)a->M * (double)a->N * (double)a->K;
  return run_split(&j, ctx, a->bd[0], macs, declined);
}

#else /* no oneDNN at build time */

int sm__dnnl_enabled(void) { return 0; }
sm_status *sm__dnnl_cache_new(sm__dnnl_cache **out) {
  *out = NULL;
  return NULL;
}
void sm__dnnl_cache_free(sm__dnnl_cache *c) { (void)c; }
sm_status *sm__dnnl_conv(sm__dnnl_cache *c, const sm__dnnl_conv_args *a, sm_kctx *ctx, int *declined) {
  (void)c, (void)a, (void)ctx;
  *declined = 1;
  return NULL;
}
sm_status *sm__dnnl_matmul(sm__dnnl_cache *c, const sm__dnnl_mm_args *a, sm_kctx *ctx, int *declined) {
  (void)c, (void)a, (void)ctx;
  *declined = 1;
  return NULL;
}
sm_status *sm__dnnl_bmm(sm__dnnl_cache *c, const sm__dnnl_bmm_args *a, sm_kctx *ctx, int *declined) {
  (void)c, (void)a, (void)ctx;
  *declined = 1;
  return NULL;
}

#endif

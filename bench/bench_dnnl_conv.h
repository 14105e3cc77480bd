/* bench_dnnl_conv.h - what bench/bench_layout.c and bench/bench_conv3x3.c share: a oneDNN 2.6
 * convolution (fp32, bias + ReLU post-op, weights reordered once into the primitive's layout) over a
 * `shape`, with the activations in NHWC or a blocked tag, and the timing helpers (this thread's CPU
 * time, a median's comparator). Included by those two drivers only (static functions); they define
 * `shape` before including it. Not built by CMake. */
#ifndef SM_BENCH_DNNL_CONV_H
#define SM_BENCH_DNNL_CONV_H
#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* any oneDNN failure ends the run, naming the call */
static void dn_check(dnnl_status_t s, const char *call) {
  if (s == dnnl_success) return;
  fprintf(stderr, "oneDNN: %s failed (%d)\n", call, (int)s);
  exit(1);
}
#define DN(call) dn_check((call), #call)

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct conv {
  dnnl_primitive_t p;
  dnnl_memory_t src, wei, bias, dst;
  const char *impl;
  dnnl_memory_desc_t src_md, dst_md;
} conv;

static void run(dnnl_stream_t st, dnnl_primitive_t p, int n, const dnnl_exec_arg_t *a) {
  DN(dnnl_primitive_execute(p, st, n, a));
  DN(dnnl_stream_wait(st));
}

static dnnl_primitive_t reorder(dnnl_engine_t eng, const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to) {
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t r;
  DN(dnnl_reorder_primitive_desc_create(&rpd, from, eng, to, eng, NULL));
  DN(dnnl_primitive_create(&r, rpd));
  return r;
}

/* bias + ReLU as a post-op, as nn_dnnl.c fuses them */
static dnnl_primitive_attr_t relu_attr(void) {
  dnnl_primitive_attr_t attr;
  dnnl_post_ops_t po;
  DN(dnnl_primitive_attr_create(&attr));
  DN(dnnl_post_ops_create(&po));
  DN(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
  DN(dnnl_primitive_attr_set_post_ops(attr, po));
  return attr;
}

/* blocked: src and dst in tag t (own buffers); else NHWC over x and y */
static void make(dnnl_engine_t eng, dnnl_stream_t st, const shape *s, dnnl_format_tag_t t, float *x, float *f,
                 float *b, float *y, conv *c) {
  int blocked = t != dnnl_nhwc;
  int oh = (s->h + s->s - 1) / s->s, ow = (s->w + s->s - 1) / s->s, pad = (oh - 1) * s->s + s->k - s->h;
  if (pad < 0) pad = 0;
  dnnl_memory_desc_t src, dst, bias, wany, wuser;
  dnnl_dims_t sd = {s->n, s->c, s->h, s->w}, dd = {s->n, s->cout, oh, ow}, bd = {s->cout},
              wd = {s->cout, s->c, s->k, s->k};
  DN(dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, t));
  DN(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, t));
  DN(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a));
  DN(dnnl_memory_desc_init_by_tag(&wany, 4, wd, dnnl_f32, dnnl_format_tag_any));
  DN(dnnl_memory_desc_init_by_tag(&wuser, 4, wd, dnnl_f32, dnnl_hwio));
  dnnl_dims_t strides = {s->s, s->s}, pl = {pad / 2, pad / 2}, pr = {pad - pad / 2, pad - pad / 2};
  dnnl_convolution_desc_t cd;
  DN(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &wany, &bias, &dst,
                                        strides, pl, pr));
  dnnl_primitive_desc_t pd;
  DN(dnnl_primitive_desc_create(&pd, &cd, relu_attr(), eng, NULL));
  DN(dnnl_primitive_create(&c->p, pd));
  DN(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &c->impl));
  c->src_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  c->dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_t wu; /* the weights, packed once */
  DN(dnnl_memory_create(&wu, &wuser, eng, f));
  DN(dnnl_memory_create(&c->wei, wmd, eng, DNNL_MEMORY_ALLOCATE));
  dnnl_exec_arg_t ra[2] = {{DNNL_ARG_FROM, wu}, {DNNL_ARG_TO, c->wei}};
  run(st, reorder(eng, &wuser, wmd), 2, ra);
  DN(dnnl_memory_create(&c->src, &c->src_md, eng, blocked ? DNNL_MEMORY_ALLOCATE : (void *)x));
  DN(dnnl_memory_create(&c->bias, &bias, eng, b));
  DN(dnnl_memory_create(&c->dst, &c->dst_md, eng, blocked ? DNNL_MEMORY_ALLOCATE : (void *)y));
}

#endif

/* device.h - a device backend as the plan and the executor see it: where its tensors live, how
 * values cross between host and device memory, and the per-run context (a stream) its kernels
 * work in. (src/runtime/device.c keeps one device per sm_backend; the CUDA one is opened from
 * libsavedmodel_cuda.so at first use, src/runtime/gpu/; tests register a fake one.)
 *
 * Placement (plan.c, sm_plan_spec.backend != CPU): a node whose op has a kernel for the backend
 * runs there unless it touches resources, strings, variants, TF1 refs or dead tensors, or the
 * kernel's prepare answers SM_UNIMPLEMENTED (a dtype or attr it does not do): then it falls back
 * to the CPU. Every value has a space (feeds: host; a device step's outputs: device); where a
 * reader needs the other space (a device kernel's inputs but those in its host_in mask, a CPU
 * kernel's inputs, every fetch), the plan adds a copy slot for that value and direction, made
 * once per run by the first reader (sm_plan.xsrc). Uploads of a Const's or a ReadVariableOp's
 * value are cached in the plan while the host tensor stays the same (weights: uploaded once). */
#ifndef SM_RUNTIME_DEVICE_H
#define SM_RUNTIME_DEVICE_H

#include "runtime/kernel.h"

typedef struct sm_device {
  const char *name; /* "CUDA" */
  void *ctx;
  /* A run's context (a stream): opened at the run's first device step or copy, closed when
   * the run ends (end waits for the run's work and reports what failed in it). */
  sm_status *(*run_begin)(void *ctx, void **run);
  sm_status *(*run_end)(void *ctx, void *run);
  /* host -> device and device -> host copies of one tensor (*out a new tensor; a download is
   * complete when it returns). run may be NULL (a copy outside a run: weights at load). */
  sm_status *(*upload)(void *ctx, void *run, const sm_tensor *host, sm_tensor **out);
  sm_status *(*download)(void *ctx, void *run, const sm_tensor *dev, sm_tensor **out);
} sm_device;

/* Registers backend b's device (it must outlive the process); fails when b has one already. */
sm_status *sm__device_register(sm_backend b, const sm_device *d);
/* Backend b's device, opening it when none is registered yet (CUDA: loads libsavedmodel_cuda.so,
 * which finds the driver and a GPU and registers its kernels); an error naming what is missing. */
sm_status *sm__device_open(sm_backend b, const sm_device **out);
/* The registered device of b, NULL when none (never opens one). */
const sm_device *sm__device_get(sm_backend b);

/* In a device kernel's compute: the device's context and the run's (from run_begin). */
void *sm__kctx_device(sm_kctx *c);
void *sm__kctx_device_run(sm_kctx *c);

/* Registers backend b's kernels without opening its device (idempotent), so that plans can be
 * placed for it for inspection (sm__plan_build_placed): needs no module, driver or GPU. */
sm_status *sm__device_plan_only(sm_backend b);

/* The CUDA backend (src/runtime/gpu/cuda_backend.c): loads the module and registers the device
 * and its kernels; a message naming the module, driver or GPU that is missing. */
sm_status *sm__cuda_open(void);
sm_status *sm__cuda_kernels_register(void); /* once per process; idempotent */

#endif

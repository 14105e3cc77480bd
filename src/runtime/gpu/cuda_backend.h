/* cuda_backend.h - what the CUDA kernels (src/ops/gpu/cuda_kernels.c) ask of the CUDA backend
 * (cuda_backend.c): the module's table and device tensors made on the run's stream. */
#ifndef SM_RUNTIME_GPU_CUDA_BACKEND_H
#define SM_RUNTIME_GPU_CUDA_BACKEND_H

#include "cuda/smcu.h"
#include "runtime/device.h"

/* The open module's table (NULL before sm__cuda_open succeeded). */
const smcu_api *sm__cuda_api(void);
/* What sm__cuda_open does once it has the module's table: opens it, registers the device and the
 * kernels. Tests give it a table of their own (host memory standing in for the GPU's). */
sm_status *sm__cuda_open_with(const smcu_api *a);
/* A new tensor in device memory (uninitialised) on stream, set as output i of the kernel c. */
sm_status *sm__cuda_output(sm_kctx *c, int i, int dtype, int rank, const int64_t *dims, sm_tensor **out);
/* Device scratch of `bytes` on the run's stream, released (stream-ordered) with *hold. */
sm_status *sm__cuda_scratch(sm_kctx *c, size_t bytes, sm_tensor **hold, void **p);
/* A failed module call's message as a status (SM_INTERNAL). */
sm_status *sm__cuda_err(const char *err);

/* The CUDA kernels (src/ops/gpu/cuda_kernels.c), registered for SM_BACKEND_CUDA when the module opens. */
extern const sm_kernel sm_kernels_cuda[];

#endif

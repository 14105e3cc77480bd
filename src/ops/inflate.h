/* inflate.h - the one zlib inflater of the kernels (src/ops/io_codec.c): DecodeCompressed, the
 * compressed file datasets (dataset_io.c) and TF1's readers (reader.c) use it. */
#ifndef SM_OPS_INFLATE_H
#define SM_OPS_INFLATE_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/kernel.h"

/* Inflates in[0..n) as TF's ZlibInputStream reads it: gzip = 1 gzip members one after another,
 * 0 one zlib stream (what follows its end is ignored); a truncated stream gives what inflated.
 * The output is scratch of ctx (charged to the run's memory budget as it grows, so a zip bomb ends
 * at the budget with SM_RESOURCE_EXHAUSTED): free it with sm__kctx_scratch_free. More than max
 * bytes out: an error naming `what` (max 1 GiB: DecodeCompressed's TF text). Corrupt data:
 * SM_DATA_LOSS with zlib's message. */
sm_status *sm__inflate(sm_kctx *ctx, int gzip, const uint8_t *in, size_t n, size_t max, const char *what, uint8_t **out,
                       size_t *outn);

#endif

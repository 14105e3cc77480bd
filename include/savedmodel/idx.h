/* idx.h - MNIST-format IDX files (gzipped or not) and the MNIST / Fashion-MNIST directory layout.
 *
 * An IDX file is a big-endian header (two zero bytes, a type byte, a rank byte, one uint32 per
 * dimension) followed by the elements. Files ending in ".gz" (or starting with gzip's magic) are
 * inflated on the fly with zlib; the inflated size must equal what the header says, so a
 * truncated or padded file is an error naming the file and the byte counts. */
#ifndef SAVEDMODEL_IDX_H
#define SAVEDMODEL_IDX_H
#include <stdint.h>

#include "savedmodel/api.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads any IDX file into a tensor of its element type (0x08 uint8, 0x09 int8, 0x0B int16,
 * 0x0C int32, 0x0D float32, 0x0E float64) and shape. Caller owns *out. */
SM_API sm_status *sm_idx_read(const char *path, sm_tensor **out);

/* Where Debian's dataset-fashion-mnist puts Fashion-MNIST. */
#define SM_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
/* Fashion-MNIST's class names, in class-id order (10 entries). */
SM_API extern const char *const sm_fashion_mnist_labels[10];

/* One split of an MNIST-format directory: split "train" reads train-images-idx3-ubyte[.gz] and
 * train-labels-idx1-ubyte[.gz], "t10k" (or "test") the t10k-* pair. images: float32
 * [n, rows, cols, 1] scaled to [0, 1]; labels: int32 [n]. Checks: magic/type (images uint8 rank
 * 3, labels uint8 rank 1), equal counts, labels < 10 (or < max_label when given > 0). Caller owns
 * both. */
SM_API sm_status *sm_mnist_load(const char *dir, const char *split, int max_label, sm_tensor **images,
                                sm_tensor **labels);

#ifdef __cplusplus
}
#endif
#endif

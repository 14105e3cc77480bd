/* npy.h - numpy's .npy and .npz files as sm_tensors: what np.load reads and np.save/np.savez write.
 *
 * Reading accepts format versions 1.0, 2.0 and 3.0, every fixed-size numpy type that has a
 * TensorFlow dtype (b1 i1 u1 i2 u2 i4 u4 i8 u8 f2 f4 f8 c8 c16) in either byte order ('>' data is
 * swapped), fortran_order True (transposed to row-major), and the string types: 'S<n>' bytes and
 * '<U<n>' / '>U<n>' text both become DT_STRING (text as UTF-8; trailing NULs dropped as numpy
 * does). Object arrays ('O', stored as pickles), structured, void, datetime and other types are
 * refused with an error naming the type. Headers past numpy's 10000-byte limit, shapes whose
 * element count overflows, and data shorter than the shape needs are errors, never crashes.
 *
 * Writing produces what np.save produces for the same array, byte for byte: version 1.0 (2.0 when
 * the header is too long), the header padded to a multiple of 64 bytes. DT_STRING is written as
 * '|S<longest>' (np.save of TensorFlow's object arrays would pickle them instead). */
#ifndef SAVEDMODEL_NPY_H
#define SAVEDMODEL_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "savedmodel/api.h"
#include "savedmodel/status.h"
#include "savedmodel/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The 6-byte magic at the start of every .npy file, and the "PK" of a zip (.npz). */
#define SM_NPY_MAGIC "\x93NUMPY"

/* Decodes a .npy image held in memory. `what` names it in error messages (a path, "x.npz[a]").
 * The caller owns *out. */
SM_API sm_status *sm_npy_decode(const void *data, size_t len, const char *what, sm_tensor **out);
/* Reads a .npy file. The caller owns *out. */
SM_API sm_status *sm_npy_read(const char *path, sm_tensor **out);

/* Encodes t as a .npy image into a malloc'ed buffer the caller frees; the quantized dtypes as the
 * integers they hold (qint8 as int8, ...), as saved_model_cli writes them. Fails for dtypes numpy
 * has no type for (bfloat16, resource, variant, float8, int4). */
SM_API sm_status *sm_npy_encode(const sm_tensor *t, uint8_t **out, size_t *len);
/* Writes t to path as np.save would (replacing the file atomically). */
SM_API sm_status *sm_npy_write(const char *path, const sm_tensor *t);

/* ---- .npz: a zip of .npy members (np.savez, np.savez_compressed) ---------------------------- */
typedef struct sm_npz sm_npz;

/* Opens an .npz held in memory (the bytes are copied) or a file. Stored and deflated members are
 * read, zip64 records are understood, CRCs are checked when a member is read. The caller owns
 * *out (sm_npz_free). */
SM_API sm_status *sm_npz_open_memory(const void *data, size_t len, const char *what, sm_npz **out);
SM_API sm_status *sm_npz_open(const char *path, sm_npz **out);
SM_API void sm_npz_free(sm_npz *z); /* NULL-safe */

/* Member names as NpzFile.files lists them: in zip order, ".npy" removed. Owned by z. */
SM_API int sm_npz_count(const sm_npz *z);
SM_API const char *sm_npz_name(const sm_npz *z, int i);
/* Reads member `name` ("x" or "x.npy", as NpzFile[...] accepts). A missing name is a NOT_FOUND
 * error. The caller owns *out. */
SM_API sm_status *sm_npz_get(const sm_npz *z, const char *name, sm_tensor **out);

/* Writes an .npz of n arrays named names[i] (".npy" is appended), stored (compress 0) or
 * deflated (compress 1) like np.savez / np.savez_compressed. */
SM_API sm_status *sm_npz_write(const char *path, const char *const *names, const sm_tensor *const *tensors, int n,
                               int compress);

#ifdef __cplusplus
}
#endif
#endif

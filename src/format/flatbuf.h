/* flatbuf.h - a small bounds-checked reader of FlatBuffers (the wire format only, no schema
 * compiler): the root table, a table's scalar fields, and its vector / string / vector-of-strings
 * fields. Every offset and length is checked against the buffer, so a truncated or hostile buffer
 * reads as "bad" (-1), never out of bounds. Used by TF Text's Fast WordPiece model (src/ops/tftext_fast.c). */
#ifndef SM_FORMAT_FLATBUF_H
#define SM_FORMAT_FLATBUF_H
#include <stddef.h>
#include <stdint.h>

typedef struct sm_fb {
  const uint8_t *p;
  size_t n;
} sm_fb;

/* The root table's position; -1 when the buffer is too short or the offset points outside it. */
int sm__fb_root(const sm_fb *b, size_t *table);
/* Field `field` (0-based, schema order) of the table at `table`: 1 and its position, 0 when
 * absent (default value), -1 when the table or its vtable is out of bounds. `size` is the
 * number of bytes the field needs. */
int sm__fb_field(const sm_fb *b, size_t table, int field, size_t size, size_t *pos);
/* Scalar fields (little-endian); absent ones give `dflt`. Return -1 when bad, else 0. */
int sm__fb_u32(const sm_fb *b, size_t table, int field, uint32_t dflt, uint32_t *out);
int sm__fb_u8(const sm_fb *b, size_t table, int field, uint8_t dflt, uint8_t *out);
/* A vector field of `elem` bytes per element: its data position and length (0 when absent).
 * Return 1 present, 0 absent, -1 bad (the whole vector must lie inside the buffer). */
int sm__fb_vector(const sm_fb *b, size_t table, int field, size_t elem, size_t *data, uint32_t *len);
/* A string field: its bytes (not NUL-terminated by contract) and length; same returns. */
int sm__fb_string(const sm_fb *b, size_t table, int field, const char **s, size_t *len);
/* Element i of a vector of strings whose data starts at `data`: -1 when bad, else 0. */
int sm__fb_string_elem(const sm_fb *b, size_t data, uint32_t i, const char **s, size_t *len);

static inline uint32_t sm__fb_rd32(const sm_fb *b, size_t pos) {
  const uint8_t *q = b->p + pos;
  return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}
#endif

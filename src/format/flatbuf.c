/* flatbuf.c - the bounds-checked FlatBuffers reader of flatbuf.h: tables through their vtables,
 * scalars, vectors, strings and vectors of strings, each offset checked against the buffer. */
#include "format/flatbuf.h"

static int in(const sm_fb *b, size_t pos, size_t len) { return pos <= b->n && len <= b->n - pos; }

static uint16_t rd16(const sm_fb *b, size_t pos) { return (uint16_t)(b->p[pos] | b->p[pos + 1] << 8); }

int sm__fb_root(const sm_fb *b, size_t *table) {
  if (!b->p || !in(b, 0, 4)) return -1;
  size_t t = sm__fb_rd32(b, 0);
  if (!in(b, t, 4)) return -1;
  *table = t;
  return 0;
}

int sm__fb_field(const sm_fb *b, size_t table, int field, size_t size, size_t *pos) {
  if (!in(b, table, 4) || field < 0) return -1;
  int64_t vt = (int64_t)table - (int32_t)sm__fb_rd32(b, table);
  if (vt < 0 || !in(b, (size_t)vt, 4)) return -1;
  size_t vsize = rd16(b, (size_t)vt), tsize = rd16(b, (size_t)vt + 2);
  if (vsize < 4 || (vsize & 1) || !in(b, (size_t)vt, vsize) || !in(b, table, tsize)) return -1;
  size_t slot = 4 + 2 * (size_t)field;
  if (slot + 2 > vsize) return 0;
  size_t fo = rd16(b, (size_t)vt + slot);
  if (!fo) return 0;
  if (fo + size > tsize || !in(b, table + fo, size)) return -1;
  *pos = table + fo;
  return 1;
}

int sm__fb_u32(const sm_fb *b, size_t table, int field, uint32_t dflt, uint32_t *out) {
  size_t pos;
  int r = sm__fb_field(b, table, field, 4, &pos);
  if (r < 0) return -1;
  *out = r ? sm__fb_rd32(b, pos) : dflt;
  return 0;
}

int sm__fb_u8(const sm_fb *b, size_t table, int field, uint8_t dflt, uint8_t *out) {
  size_t pos;
  int r = sm__fb_field(b, table, field, 1, &pos);
  if (r < 0) return -1;
  *out = r ? b->p[pos] : dflt;
  return 0;
}

/* The vector that the uoffset at `at` points to. */
static int vec_at(const sm_fb *b, size_t at, size_t elem, size_t *data, uint32_t *len) {
  size_t v = at + (size_t)sm__fb_rd32(b, at);
  if (v < at || !in(b, v, 4)) return -1;
  uint32_t n = sm__fb_rd32(b, v);
  if (elem && n > (b->n - v - 4) / elem) return -1;
  *data = v + 4, *len = n;
  return 1;
}

int sm__fb_vector(const sm_fb *b, size_t table, int field, size_t elem, size_t *data, uint32_t *len) {
  size_t pos;
  *data = 0, *len = 0;
  int r = sm__fb_field(b, table, field, 4, &pos);
  if (r <= 0) return r;
  return vec_at(b, pos, elem, data, len);
}

int sm__fb_string(const sm_fb *b, size_t table, int field, const char **s, size_t *len) {
  size_t data;
  uint32_t n;
  *s = "", *len = 0;
  int r = sm__fb_vector(b, table, field, 1, &data, &n);
  if (r <= 0) return r;
  *s = (const char *)b->p + data, *len = n;
  return 1;
}

int sm__fb_string_elem(const sm_fb *b, size_t data, uint32_t i, const char **s, size_t *len) {
  size_t at = data + 4 * (size_t)i, d;
  uint32_t n;
  if (!in(b, at, 4) || vec_at(b, at, 1, &d, &n) < 0) return -1;
  *s = (const char *)b->p + d, *len = n;
  return 0;
}

/* example.c - tf.train.Example encoding (example.proto, feature.proto) for inputs of classify and
 * regress signatures: features are kept in plain arrays and turned into protobuf-c messages only
 * when serialized. */
#include <stdlib.h>
#include <string.h>

#include "example.pb-c.h"
#include "feature.pb-c.h"
#include "format/pb_util.h"
#include "savedmodel/example.h"

typedef enum { F_FLOAT, F_INT64, F_BYTES } fkind;

typedef struct {
  char *name;
  fkind kind;
  size_t n;
  float *f;
  int64_t *i;
  ProtobufCBinaryData *b;
} feature;

struct sm_example {
  feature *f;
  size_t n, cap;
};

sm_status *sm_example_new(sm_example **out) {
  *out = calloc(1, sizeof **out);
  return *out ? NULL : sm_status_new(SM_NO_MEMORY, "out of memory creating a tf.Example");
}

static void feature_clear(feature *f) {
  free(f->f);
  free(f->i);
  if (f->b)
    for (size_t k = 0; k < f->n; k++) free(f->b[k].data);
  free(f->b);
  f->f = NULL;
  f->i = NULL;
  f->b = NULL;
  f->n = 0;
}

void sm_example_free(sm_example *e) {
  if (!e) return;
  for (size_t k = 0; k < e->n; k++) {
    feature_clear(&e->f[k]);
    free(e->f[k].name);
  }
  free(e->f);
  free(e);
}

/* The slot for name: the existing one (its old values cleared) or a new one at the end. */
static sm_status *slot(sm_example *e, const char *name, feature **out) {
  size_t nl = strlen(name);
  if (!sm__utf8_valid((const uint8_t *)name, nl))
    return sm_status_new(SM_INVALID_ARGUMENT, "tf.Example feature name is not valid UTF-8");
  for (size_t k = 0; k < e->n; k++)
    if (strcmp(e->f[k].name, name) == 0) {
      feature_clear(&e->f[k]);
      *out = &e->f[k];
      return NULL;
    }
  if (e->n == e->cap) {
    size_t c = e->cap ? 2 * e->cap : 8;
    feature *nf = realloc(e->f, c * sizeof *nf);
    if (!nf) return sm_status_new(SM_NO_MEMORY, "out of memory adding feature '%s'", name);
    e->f = nf;
    e->cap = c;
  }
  feature *f = &e->f[e->n];
  memset(f, 0, sizeof *f);
  if (!(f->name = malloc(nl + 1))) return sm_status_new(SM_NO_MEMORY, "out of memory adding feature '%s'", name);
  memcpy(f->name, name, nl + 1);
  e->n++;
  *out = f;
  return NULL;
}

sm_status *sm_example_add_floats(sm_example *e, const char *name, const float *v, size_t n) {
  feature *f;
  sm_status *st = slot(e, name, &f);
  if (st) return st;
  f->kind = F_FLOAT;
  if (n && !(f->f = malloc(n * sizeof *v))) return sm_status_new(SM_NO_MEMORY, "out of memory in feature '%s'", name);
  if (n) memcpy(f->f, v, n * sizeof *v);
  f->n = n;
  return NULL;
}

sm_status *sm_example_add_int64s(sm_example *e, const char *name, const int64_t *v, size_t n) {
  feature *f;
  sm_status *st = slot(e, name, &f);
  if (st) return st;
  f->kind = F_INT64;
  if (n && !(f->i = malloc(n * sizeof *v))) return sm_status_new(SM_NO_MEMORY, "out of memory in feature '%s'", name);
  if (n) memcpy(f->i, v, n * sizeof *v);
  f->n = n;
  return NULL;
}

sm_status *sm_example_add_bytes(sm_example *e, const char *name, const char *const *v, const size_t *lens, size_t n) {
  feature *f;
  sm_status *st = slot(e, name, &f);
  if (st) return st;
  f->kind = F_BYTES;
  if (n && !(f->b = calloc(n, sizeof *f->b))) return sm_status_new(SM_NO_MEMORY, "out of memory in feature '%s'", name);
  f->n = n;
  for (size_t k = 0; k < n; k++) {
    f->b[k].data = malloc(lens[k] ? lens[k] : 1);
    if (!f->b[k].data) return sm_status_new(SM_NO_MEMORY, "out of memory in feature '%s'", name);
    if (lens[k]) memcpy(f->b[k].data, v[k], lens[k]);
    f->b[k].len = lens[k];
  }
  return NULL;
}

sm_status *sm_example_serialize(const sm_example *e, uint8_t **out, size_t *len) {
  *out = NULL;
  *len = 0;
  size_t n = e->n;
  Tensorflow__Features__FeatureEntry *ents = calloc(n ? n : 1, sizeof *ents);
  Tensorflow__Features__FeatureEntry **ptrs = calloc(n ? n : 1, sizeof *ptrs);
  Tensorflow__Feature *feats = calloc(n ? n : 1, sizeof *feats);
  Tensorflow__FloatList *fl = calloc(n ? n : 1, sizeof *fl);
  Tensorflow__Int64List *il = calloc(n ? n : 1, sizeof *il);
  Tensorflow__BytesList *bl = calloc(n ? n : 1, sizeof *bl);
  sm_status *st = NULL;
  if (!ents || !ptrs || !feats || !fl || !il || !bl) {
    st = sm_status_new(SM_NO_MEMORY, "out of memory serializing a tf.Example");
    goto done;
  }
  for (size_t k = 0; k < n; k++) {
    const feature *f = &e->f[k];
    tensorflow__features__feature_entry__init(&ents[k]);
    tensorflow__feature__init(&feats[k]);
    ents[k].key = f->name;
    ents[k].value = &feats[k];
    ptrs[k] = &ents[k];
    if (f->kind == F_FLOAT) {
      tensorflow__float_list__init(&fl[k]);
      fl[k].n_value = f->n;
      fl[k].value = f->f;
      feats[k].kind_case = TENSORFLOW__FEATURE__KIND_FLOAT_LIST;
      feats[k].float_list = &fl[k];
    } else if (f->kind == F_INT64) {
      tensorflow__int64_list__init(&il[k]);
      il[k].n_value = f->n;
      il[k].value = f->i;
      feats[k].kind_case = TENSORFLOW__FEATURE__KIND_INT64_LIST;
      feats[k].int64_list = &il[k];
    } else {
      tensorflow__bytes_list__init(&bl[k]);
      bl[k].n_value = f->n;
      bl[k].value = f->b;
      feats[k].kind_case = TENSORFLOW__FEATURE__KIND_BYTES_LIST;
      feats[k].bytes_list = &bl[k];
    }
  }
  Tensorflow__Features features = TENSORFLOW__FEATURES__INIT;
  features.n_feature = n;
  features.feature = ptrs;
  Tensorflow__Example ex = TENSORFLOW__EXAMPLE__INIT;
  ex.features = n ? &features : NULL; /* Python leaves an untouched features field unset */
  size_t sz = tensorflow__example__get_packed_size(&ex);
  uint8_t *buf = malloc(sz ? sz : 1);
  if (!buf) {
    st = sm_status_new(SM_NO_MEMORY, "out of memory serializing a tf.Example");
    goto done;
  }
  tensorflow__example__pack(&ex, buf);
  *out = buf;
  *len = sz;
done:
  free(ents);
  free(ptrs);
  free(feats);
  free(fl);
  free(il);
  free(bl);
  return st;
}

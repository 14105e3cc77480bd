/* variant.h - DT_VARIANT elements: refcounted objects held by pointer (internal; not public API).
 *
 * A DT_VARIANT tensor's elements are sm_variant pointers (NULL = empty variant). The object embeds
 * sm_variant as its first member; a tag names its type (TensorFlow's TypeName(), e.g.
 * "tensorflow::TensorList") and `release` frees it when the last reference goes. Copying a variant
 * tensor (sm_tensor_copy) or forwarding it shares the objects; freeing it drops one reference per
 * element. An object is immutable once another reference exists: writers check
 * sm__variant_is_shared and copy (copy-on-write). Variants live only in memory: every serializer
 * refuses them (sm_tensor_data is NULL and sm_tensor_nbytes 0 for DT_VARIANT, as for DT_STRING). */
#ifndef SM_BASE_VARIANT_H
#define SM_BASE_VARIANT_H
#include <stdatomic.h>

#include "savedmodel/tensor.h"

typedef struct sm_variant sm_variant;
struct sm_variant {
  atomic_int refs;
  const char *type_name;             /* static string */
  void (*release)(sm_variant *self); /* frees the whole object */
};

/* Sets refs to 1. */
void sm__variant_init(sm_variant *v, const char *type_name, void (*release)(sm_variant *));
sm_variant *sm__variant_ref(sm_variant *v); /* NULL-safe */
void sm__variant_unref(sm_variant *v);      /* NULL-safe; the last one calls release */
int sm__variant_is_shared(const sm_variant *v);

/* The element array of a DT_VARIANT tensor (n pointers, owned references); NULL for other dtypes.
 * Writing an element: unref the old one, store a reference the tensor then owns. */
sm_variant **sm__tensor_variants(const sm_tensor *t);

#endif

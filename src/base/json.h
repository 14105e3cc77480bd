/* json.h - a small JSON reader for configuration files (Keras's model.to_json() for the trainer):
 * a document read whole into a tree of malloc'ed nodes. Not for untrusted network bodies at scale
 * (src/serve has its own arena reader with budgets); this one bounds only nesting depth and size. */
#ifndef SM_BASE_JSON_H
#define SM_BASE_JSON_H
#include <stddef.h>

#include "savedmodel/status.h"

enum { SM_JSON_NULL, SM_JSON_BOOL, SM_JSON_NUM, SM_JSON_STR, SM_JSON_ARR, SM_JSON_OBJ };

typedef struct sm__json {
  int type;
  int b;                   /* SM_JSON_BOOL */
  double num;              /* SM_JSON_NUM */
  char *str;               /* SM_JSON_STR (NUL-terminated, UTF-8; embedded NULs refused) */
  size_t n;                /* elements of an array / members of an object */
  struct sm__json **items; /* array elements; object values */
  char **keys;             /* object keys */
} sm__json;

/* Parses text[0, len) (one value, whitespace around it). Depth is bounded at 128. *out is the
 * root, freed by sm__json_free. Errors name `what` and the byte offset. */
sm_status *sm__json_parse(const char *text, size_t len, const char *what, sm__json **out);
void sm__json_free(sm__json *v); /* NULL-safe */

/* o[key] when o is an object that has it, else NULL. */
const sm__json *sm__json_get(const sm__json *o, const char *key);
/* The type's name for messages: "null", "boolean", "number", "string", "array", "object". */
const char *sm__json_type_name(const sm__json *v);

#endif

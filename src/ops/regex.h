/* regex.h - RE2 through src/ops/regex.c's lazily opened module, for kernels of other families:
 * io.c's StaticRegexFullMatch hands it the patterns its own matcher does not cover. */
#ifndef SM_OPS_REGEX_H
#define SM_OPS_REGEX_H
#include <stddef.h>

#include "savedmodel/status.h"

/* Compiles pattern[0..len) with RE2 (TF's "Invalid pattern: P, error: E" when RE2 refuses it;
 * SM_UNIMPLEMENTED naming RE2 and `op` when the module is missing). Free with sm__re2_free. */
sm_status *sm__re2_compile(const char *op, const char *pat, size_t len, void **re);
/* RE2::FullMatch(s[0..n), re): 1 or 0. Thread-safe on one compiled pattern. */
int sm__re2_full_match(const void *re, const char *s, size_t n);
/* One step of RE2::FindAndConsume with one string argument (group 1) on s[0..n) as the whole text:
 * 1 (group 1 is s[*gb..*ge), the match ends at *end), 0 (no match, or no group 1 in the pattern),
 * -1 (group 1 took no part). */
int sm__re2_find_group1(const void *re, const char *s, size_t n, size_t *gb, size_t *ge, size_t *end);
void sm__re2_free(void *re); /* NULL-safe */

#endif

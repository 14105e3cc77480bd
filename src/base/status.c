/* status.c - sm_status: an error code plus a message the caller owns.
 *
 * Out of memory must be reportable without memory, so one static status stands for it and
 * sm_status_free() leaves it alone (the idea of Lua's preallocated "not enough memory"). */
#include "savedmodel/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sm_status {
  sm_code code;
  char *msg;
};

static char oom_msg[] = "out of memory";
static sm_status oom_status = {SM_NO_MEMORY, oom_msg};

sm_status *sm_status_newv(sm_code code, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  sm_status *s = malloc(sizeof *s);
  char *msg = malloc((size_t)n + 1);
  if (!s || !msg) {
    free(s);
    free(msg);
    return &oom_status;
  }
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  s->code = code;
  s->msg = msg;
  return s;
}

sm_status *sm_status_new(sm_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sm_status *s = sm_status_newv(code, fmt, ap);
  va_end(ap);
  return s;
}

sm_status *sm_status_prefix(sm_status *s, const char *fmt, ...) {
  if (!s || s == &oom_status) return s;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0) return s; /* an empty prefix (or a bad format) adds nothing */
  size_t old = strlen(s->msg);
  char *msg = malloc((size_t)n + 2 + old + 1);
  if (!msg) return s; /* keep the original message rather than lose it */
  va_start(ap, fmt);
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  va_end(ap);
  /* The separator is ": ", or what of it the prefix lacks: "x: " and "x:" are not doubled. */
  size_t at = (size_t)n;
  /* Context already there is not repeated: "node 'c' (Const): x" prefixed with "node 'c' (Const)"
   * stays as it is (two layers that each name the node, one message). */
  size_t core = at;
  while (core && (msg[core - 1] == ' ' || msg[core - 1] == ':')) core--;
  if (core && old >= core + 1 && !memcmp(s->msg, msg, core) && s->msg[core] == ':' &&
      (s->msg[core + 1] == ' ' || !s->msg[core + 1])) {
    free(msg);
    return s;
  }
  if (msg[at - 1] != ':' && !(at >= 2 && msg[at - 2] == ':' && msg[at - 1] == ' ')) msg[at++] = ':';
  if (msg[at - 1] == ':') msg[at++] = ' ';
  memcpy(msg + at, s->msg, old + 1);
  free(s->msg);
  s->msg = msg;
  return s;
}

sm_code sm_status_code(const sm_status *s) { return s ? s->code : SM_OK; }
const char *sm_status_message(const sm_status *s) { return s ? s->msg : ""; }

const char *sm_code_name(sm_code code) {
  switch (code) {
  case SM_OK: return "OK";
  case SM_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case SM_NOT_FOUND: return "NOT_FOUND";
  case SM_DATA_LOSS: return "DATA_LOSS";
  case SM_UNIMPLEMENTED: return "UNIMPLEMENTED";
  case SM_IO: return "IO";
  case SM_NO_MEMORY: return "NO_MEMORY";
  case SM_ALREADY_EXISTS: return "ALREADY_EXISTS";
  case SM_OUT_OF_RANGE: return "OUT_OF_RANGE";
  case SM_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
  case SM_INTERNAL: return "INTERNAL";
  case SM_UNAVAILABLE: return "UNAVAILABLE";
  case SM_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
  case SM_CANCELLED: return "CANCELLED";
  case SM_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
  }
  return "UNKNOWN";
}

void sm_status_free(sm_status *s) {
  if (!s || s == &oom_status) return;
  free(s->msg);
  free(s);
}

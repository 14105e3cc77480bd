/* fuzz_pbtxt.c - libFuzzer target: text through sm_pbtxt_parse as a SavedModel.
 *
 * What parses is printed; the print must parse again to the same print (printer and parser
 * agree), and the message packed and parsed as binary must print the same too. tests/unit/test_fuzz_regressions.c includes this file with
 * FUZZ_PBTXT_ENTRY renamed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "savedmodel/format.h"
#include "savedmodel/pbtxt.h"

#ifndef FUZZ_PBTXT_ENTRY
#define FUZZ_PBTXT_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_PBTXT_ENTRY(const uint8_t *data, size_t size);

static uint8_t *fpt_pack(const ProtobufCMessage *m, size_t *n) {
  *n = protobuf_c_message_get_packed_size(m);
  uint8_t *p = malloc(*n ? *n : 1);
  if (!p || protobuf_c_message_pack(m, p) != *n) abort();
  return p;
}

int FUZZ_PBTXT_ENTRY(const uint8_t *data, size_t size) {
  const ProtobufCMessageDescriptor *d = &tensorflow__saved_model__descriptor;
  ProtobufCMessage *m = NULL;
  sm_status *s = sm_pbtxt_parse(d, (const char *)data, size, "fuzz.pbtxt", &m);
  if (s) {
    (void)sm_status_message(s);
    sm_status_free(s);
    return 0;
  }
  char *t1 = NULL;
  size_t l1 = 0;
  s = sm_pbtxt_print(m, &t1, &l1);
  if (s) {
    fprintf(stderr, "print failed: %s\n", sm_status_message(s));
    abort();
  }
  ProtobufCMessage *m2 = NULL;
  s = sm_pbtxt_parse(d, t1, l1, "fuzz-reprint.pbtxt", &m2);
  if (s) {
    fprintf(stderr, "the print does not parse: %s\n---\n%s\n---\n", sm_status_message(s), t1);
    abort();
  }
  char *t2 = NULL;
  size_t l2 = 0;
  s = sm_pbtxt_print(m2, &t2, &l2);
  if (s) abort();
  if (l1 != l2 || memcmp(t1, t2, l1) != 0) {
    fprintf(stderr, "print(parse(print(x))) != print(x):\n---\n%s\n---\n%s\n---\n", t1, t2);
    abort();
  }
  /* Binary round trip: print(parse_binary(pack(m))) == print(m). (Packed bytes of m and m2 are
   * not compared: the printer sorts map entries, so equal messages can pack differently.) */
  size_t n1;
  uint8_t *p1 = fpt_pack(m, &n1);
  Tensorflow__SavedModel *sm = NULL;
  s = sm_saved_model_parse(p1, n1, "fuzz-packed.pb", &sm);
  if (s) {
    fprintf(stderr, "the packed message does not parse: %s\n", sm_status_message(s));
    abort();
  }
  char *t3 = NULL;
  size_t l3 = 0;
  if ((s = sm_pbtxt_print(&sm->base, &t3, &l3))) abort();
  if (l1 != l3 || memcmp(t1, t3, l1) != 0) {
    fprintf(stderr, "print(parse_binary(pack(x))) != print(x):\n---\n%s\n---\n%s\n---\n", t1, t3);
    abort();
  }
  sm_saved_model_free(sm);
  free(t3);
  free(p1);
  free(t1);
  free(t2);
  protobuf_c_message_free_unpacked(m, NULL);
  protobuf_c_message_free_unpacked(m2, NULL);
  return 0;
}

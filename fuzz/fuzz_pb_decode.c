/* fuzz_pb_decode.c - libFuzzer target: our protobuf decoder (src/format/pb_decode.c) against the
 * path it replaced (sm_pb_check, then protobuf-c's unpack).
 *
 * For any bytes: when the fast decoder accepts, the old path must accept and both messages must
 * pack to the same bytes; the fast decoder sharing identical small submessages and deferring
 * repeated elements to other threads must give the plain single pass's answer; sm__pb_decode (fast path, else old path) must give the old path's answer:
 * the same error message, or a message that packs the same. tests/unit/test_pb_decode.c includes
 * this file with FUZZ_PB_DECODE_ENTRY renamed and runs it over fixtures and their mutations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/pb_arena.h"
#include "format/pb_decode.h"
#include "graph_debug_info.pb-c.h"
#include "savedmodel/format.h"

#ifndef FUZZ_PB_DECODE_ENTRY
#define FUZZ_PB_DECODE_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_PB_DECODE_ENTRY(const uint8_t *data, size_t size);

/* 1 when a and b pack to the same bytes. */
static int fpd_same_packing(const ProtobufCMessage *a, const ProtobufCMessage *b) {
  size_t na = protobuf_c_message_get_packed_size(a), nb = protobuf_c_message_get_packed_size(b);
  if (na != nb) return 0;
  uint8_t *ba = malloc(na ? na : 1), *bb = malloc(nb ? nb : 1);
  int same = 0;
  if (ba && bb) {
    size_t wa = protobuf_c_message_pack(a, ba), wb = protobuf_c_message_pack(b, bb);
    same = wa == na && wb == nb && memcmp(ba, bb, na) == 0;
  } else {
    same = 1; /* out of memory: nothing to compare */
  }
  free(ba);
  free(bb);
  return same;
}

/* What the decoders did with one input (tests count these). */
typedef struct fpd_result {
  int fast_ok;  /* the fast path decoded it */
  int ref_ok;   /* the old path accepted it */
  int mismatch; /* anything disagreeing (0 = fine) */
} fpd_result;

static fpd_result fpd_diff(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t size) {
  fpd_result r = {0, 0, 0};
  const char *what = "fuzz.pb";
  sm_status *rs = sm_pb_check(desc, data, size, what);
  ProtobufCMessage *ref = rs ? NULL : protobuf_c_message_unpack(desc, NULL, size, data);
  r.ref_ok = ref != NULL;

  ProtobufCMessage *fast = NULL;
  int fr = sm__pb_decode_fast_opts(desc, data, size, &fast, 1, 0, 0); /* one pass, one thread, no sharing */
  r.fast_ok = fr == 0;
  if (fr == 0) {
    if (!ref) {
      fprintf(stderr, "fpd: fast decoder accepted what the old path refuses: %s\n",
              rs ? sm_status_message(rs) : "protobuf-c refused it");
      r.mismatch = 1;
    } else if (!fpd_same_packing(fast, ref)) {
      fprintf(stderr, "fpd: fast decoder and protobuf-c pack differently\n");
      r.mismatch = 2;
    }
  }
  /* The same decode with identical small submessages shared, and with repeated elements deferred
   * to several threads: the same answer. Deferral is tried on both the outer elements (a
   * MetaGraphDef) and inner ones. */
  static const struct { int threads; size_t defer_max; int share; } par[3] = {{1, 0, 1}, {3, SIZE_MAX, 1}, {2, 24, 1}};
  for (int i = 0; i < 3 && !r.mismatch; i++) {
    ProtobufCMessage *pm = NULL;
    int pr = sm__pb_decode_fast_opts(desc, data, size, &pm, par[i].threads, par[i].defer_max, par[i].share);
    if ((pr == 0) != (fr == 0)) {
      fprintf(stderr, "fpd: the decode with sharing and %d threads %s, the plain one %s\n", par[i].threads,
              pr == 0 ? "accepted" : "refused", fr == 0 ? "accepted" : "refused");
      r.mismatch = 6;
    } else if (pr == 0 && !fpd_same_packing(pm, fast)) {
      fprintf(stderr, "fpd: the decode with sharing and %d threads and the plain one pack differently\n",
              par[i].threads);
      r.mismatch = 7;
    }
    sm__pb_arena_free(pm);
  }
  sm__pb_arena_free(fast);

  ProtobufCMessage *got = NULL;
  sm_status *gs = sm__pb_decode(desc, data, size, what, &got);
  if (!gs != !!ref) {
    fprintf(stderr, "fpd: sm__pb_decode %s, the old path %s\n", gs ? sm_status_message(gs) : "accepted",
            ref ? "accepted" : "refused");
    r.mismatch = 3;
  } else if (gs && rs && strcmp(sm_status_message(gs), sm_status_message(rs)) != 0) {
    fprintf(stderr, "fpd: messages differ:\n  new: %s\n  old: %s\n", sm_status_message(gs), sm_status_message(rs));
    r.mismatch = 4;
  } else if (got && ref && !fpd_same_packing(got, ref)) {
    fprintf(stderr, "fpd: sm__pb_decode and protobuf-c pack differently\n");
    r.mismatch = 5;
  }
  sm__pb_arena_free(got);
  sm_status_free(gs);
  sm_status_free(rs);
  protobuf_c_message_free_unpacked(ref, NULL);
  return r;
}

int FUZZ_PB_DECODE_ENTRY(const uint8_t *data, size_t size) {
  /* The first byte picks the root type, so small messages get fuzzed directly too. */
  static const ProtobufCMessageDescriptor *const roots[] = {
      &tensorflow__saved_model__descriptor, &tensorflow__node_def__descriptor,
      &tensorflow__attr_value__descriptor, &tensorflow__tensor_proto__descriptor,
      &tensorflow__saved_object_graph__descriptor, &tensorflow__graph_debug_info__descriptor};
  if (size < 1) return 0;
  const ProtobufCMessageDescriptor *d = roots[data[0] % (sizeof roots / sizeof roots[0])];
  fpd_result r = fpd_diff(d, data + 1, size - 1);
  if (r.mismatch) abort();
  return 0;
}

/* fuzz_media.c - libFuzzer target: bytes as an audio or image file through the decode ops of
 * src/ops/audio.c (DecodeWav) and src/ops/image_codec.c (DecodeGif, DecodeBmp, DecodeWebP, DecodeJpeg
 * with CMYK / YCCK, DecodePng, DecodeAndCropJpeg, DecodeImage), one-node graphs as a model holds them.
 *
 * The first byte picks the case (op and attrs, below), the rest is the file (seeds: tools/make_decode_seeds.py
 * writes fuzz/seeds/fuzz_media/, each seed's first byte naming its case). fuzz/build.sh compiles
 * image_codec.c with the codec headers it finds; the libraries themselves are dlopened (not instrumented).
 * tests/unit/test_fuzz_regressions.c includes this file with FUZZ_MEDIA_ENTRY renamed. */
#include "fuzz_op.h"

#ifndef FUZZ_MEDIA_ENTRY
#define FUZZ_MEDIA_ENTRY LLVMFuzzerTestOneInput
#endif

int FUZZ_MEDIA_ENTRY(const uint8_t *data, size_t size);

static fop_case fmedia_cases[] = {
    /* 0 */ {FOP_GRAPH(FOP_NODE("DecodeWav", "", "")), 2, NULL, NULL},
    /* 1 */ {FOP_GRAPH(FOP_NODE("DecodeWav", "", FOP_I("desired_channels", 2) FOP_I("desired_samples", 50))), 2, NULL, NULL},
    /* 2 */ {FOP_GRAPH(FOP_NODE("DecodeGif", "", "")), 1, NULL, NULL},
    /* 3 */ {FOP_GRAPH(FOP_NODE("DecodeBmp", "", FOP_I("channels", 0))), 1, NULL, NULL},
    /* 4 */ {FOP_GRAPH(FOP_NODE("DecodeBmp", "", FOP_I("channels", 4))), 1, NULL, NULL},
    /* 5 */ {FOP_GRAPH(FOP_NODE("DecodeWebP", "", FOP_I("channels", 0))), 1, NULL, NULL},
    /* 6 */ {FOP_GRAPH(FOP_NODE("DecodeWebP", "", FOP_I("channels", 3))), 1, NULL, NULL},
    /* 7 */ {FOP_GRAPH(FOP_NODE("DecodeJpeg", "", FOP_I("channels", 0))), 1, NULL, NULL},
    /* 8 */
    {FOP_GRAPH(FOP_NODE("DecodeJpeg", "",
                        FOP_I("channels", 1) FOP_I("ratio", 2) FOP_B("fancy_upscaling", false)
                            FOP_B("try_recover_truncated", true) FOP_F("acceptable_fraction", 0.5)
                                FOP_S("dct_method", "INTEGER_ACCURATE"))),
     1, NULL, NULL},
    /* 9 */ {FOP_GRAPH(FOP_NODE("DecodePng", "", FOP_I("channels", 0) FOP_T("dtype", "DT_UINT16"))), 1, NULL, NULL},
    /* 10 */
    {FOP_GRAPH(FOP_CONST("win", "DT_INT32", "tensor_shape { dim { size: 4 } } int_val: 1 int_val: 1 int_val: 3 int_val: 2")
                   FOP_NODE("DecodeAndCropJpeg", "input: \"win\"", FOP_I("channels", 3))),
     1, NULL, NULL},
    /* 11 */
    {FOP_GRAPH(FOP_NODE("DecodeImage", "", FOP_I("channels", 0) FOP_T("dtype", "DT_UINT8") FOP_B("expand_animations", true))),
     1, NULL, NULL},
    /* 12 */
    {FOP_GRAPH(FOP_NODE("DecodeImage", "", FOP_I("channels", 3) FOP_T("dtype", "DT_FLOAT") FOP_B("expand_animations", false))),
     1, NULL, NULL},
};
#define FMEDIA_N ((int)(sizeof fmedia_cases / sizeof fmedia_cases[0]))

static void fmedia_cleanup(void) { fop_free_cases(fmedia_cases, FMEDIA_N); }

int FUZZ_MEDIA_ENTRY(const uint8_t *data, size_t size) {
  static int registered;
  if (!registered) registered = 1, atexit(fmedia_cleanup);
  if (size < 1) return 0;
  fop_run(&fmedia_cases[data[0] % FMEDIA_N], "fuzz_media", data + 1, size - 1);
  return 0;
}

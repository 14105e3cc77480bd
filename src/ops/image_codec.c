/* image_codec.c - the image codecs of tf.io / tf.image: DecodeJpeg, DecodePng, DecodeImage (the
 * format sniffed from the bytes, as TF's DecodeImageV2 kernel does for all three: DecodePng
 * decodes a JPEG too), EncodePng, EncodeJpeg, EncodeJpegVariableQuality (EncodeJpeg's defaults with
 * the quality an input), ExtractJpegShape (the header's height, width, components), with TensorFlow's libjpeg-turbo / libpng settings
 * (tensorflow/core/lib/jpeg/jpeg_mem.cc, lib/png/png_io.cc): JPEG decoded with the fast integer
 * IDCT and fancy upsampling unless the attrs say otherwise, PNG's gray/alpha/palette/16-bit
 * conversions chosen as TF chooses them, uint16 and float32 outputs scaled as TF scales them.
 *
 * Binding: like OpenBLAS (src/base/lazylib.c) neither library is linked: libjpeg.so.62 and
 * libpng16.so.16 are dlopened at the first codec op (their headers are needed at build time only,
 * SM_HAVE_JPEG / SM_HAVE_PNG). Without one the ops refuse with UNIMPLEMENTED naming the library.
 * DecodeAndCropJpeg crops while decoding, as TF (jpeg_crop_scanline, jpeg_skip_scanlines).
 * GIF (DecodeGif, and GIFs through the other decode ops as TF's DecodeImageV2 takes them) goes
 * through giflib (libgif.so.7, SM_HAVE_GIF), with TF's frame compositing (gif_io.cc: the canvas is
 * the largest frame, a frame's transparent index keeps the previous frame's pixel); a pre-scan of
 * the GIF's blocks refuses frames and animations too large before giflib allocates anything. BMP
 * (DecodeBmp) is TF's own parser (8/24/32-bit uncompressed, its header checks and messages).
 * WebP (DecodeWebP, and through the other decode ops) goes through libwebp.so.7, animations through
 * libwebpdemux.so.2 (SM_HAVE_WEBP), with TF's checks and shapes (webp_io.cc). CMYK and YCCK JPEGs
 * decode to RGB as TF's jpeg_mem.cc converts them (Adobe's inverted CMYK or plain). Every library
 * error is caught (longjmp out of libjpeg's error_exit / libpng's error handler) and becomes
 * TF's message; nothing in the input can crash the process. */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/lazylib.h"
#include "codec_int.h"
#include "runtime/kernel.h"

#ifdef SM_HAVE_JPEG
#include <jpeglib.h>
#endif
#ifdef SM_HAVE_PNG
#include <png.h>
#endif
#ifdef SM_HAVE_GIF
#include <gif_lib.h>
#endif
#ifdef SM_HAVE_WEBP
#include <webp/decode.h>
#include <webp/demux.h>
#endif

/* The largest image either codec makes here (pixels x channels), as TF's own 2^29-pixel guard. */
#define CODEC_MAX_PIXELS ((int64_t)1 << 29)

/* ---- the libraries, bound once --------------------------------------------------------------- */

#ifdef SM_HAVE_JPEG
static struct {
  struct jpeg_error_mgr *(*std_error)(struct jpeg_error_mgr *);
  void (*create_d)(j_decompress_ptr, int, size_t);
  void (*create_c)(j_compress_ptr, int, size_t);
  void (*destroy)(j_common_ptr);
  void (*mem_src)(j_decompress_ptr, const unsigned char *, unsigned long);
  void (*mem_dest)(j_compress_ptr, unsigned char **, unsigned long *);
  int (*read_header)(j_decompress_ptr, boolean);
  void (*calc_dims)(j_decompress_ptr);
  boolean (*start_d)(j_decompress_ptr);
  JDIMENSION (*read_lines)(j_decompress_ptr, JSAMPARRAY, JDIMENSION);
  boolean (*finish_d)(j_decompress_ptr);
  void (*set_defaults)(j_compress_ptr);
  void (*set_quality)(j_compress_ptr, int, boolean);
  void (*simple_progression)(j_compress_ptr);
  void (*start_c)(j_compress_ptr, boolean);
  void (*write_marker)(j_compress_ptr, int, const JOCTET *, unsigned int);
  JDIMENSION (*write_lines)(j_compress_ptr, JSAMPARRAY, JDIMENSION);
  void (*finish_c)(j_compress_ptr);
  void (*crop_scanline)(j_decompress_ptr, JDIMENSION *, JDIMENSION *);
  JDIMENSION (*skip_scanlines)(j_decompress_ptr, JDIMENSION);
  int ok;
} J;
#endif
#ifdef SM_HAVE_PNG
static struct {
  png_structp (*create_read)(png_const_charp, png_voidp, png_error_ptr, png_error_ptr);
  png_structp (*create_write)(png_const_charp, png_voidp, png_error_ptr, png_error_ptr);
  png_infop (*create_info)(png_const_structrp);
  void (*destroy_read)(png_structpp, png_infopp, png_infopp);
  void (*destroy_write)(png_structpp, png_infopp);
  jmp_buf *(*set_longjmp_fn)(png_structrp, png_longjmp_ptr, size_t);
  void (*set_read_fn)(png_structrp, png_voidp, png_rw_ptr);
  void (*set_write_fn)(png_structrp, png_voidp, png_rw_ptr, png_flush_ptr);
  png_voidp (*get_io_ptr)(png_const_structrp);
  png_voidp (*get_error_ptr)(png_const_structrp);
  void (*read_info)(png_structrp, png_inforp);
  png_uint_32 (*get_IHDR)(png_const_structrp, png_const_inforp, png_uint_32 *, png_uint_32 *, int *, int *, int *,
                          int *, int *);
  png_uint_32 (*get_valid)(png_const_structrp, png_const_inforp, png_uint_32);
  png_byte (*get_channels)(png_const_structrp, png_const_inforp);
  int (*set_interlace_handling)(png_structrp);
  void (*set_tRNS_to_alpha)(png_structrp);
  void (*set_add_alpha)(png_structrp, png_uint_32, int);
  void (*set_strip_alpha)(png_structrp);
  void (*set_strip_16)(png_structrp);
  void (*set_packing)(png_structrp);
  void (*set_swap)(png_structrp);
  void (*set_palette_to_rgb)(png_structrp);
  void (*set_expand_gray_1_2_4_to_8)(png_structrp);
  void (*set_rgb_to_gray)(png_structrp, int, double, double);
  void (*set_gray_to_rgb)(png_structrp);
  void (*read_update_info)(png_structrp, png_inforp);
  void (*read_row)(png_structrp, png_bytep, png_bytep);
  void (*read_end)(png_structrp, png_inforp);
  void (*set_IHDR)(png_const_structrp, png_inforp, png_uint_32, png_uint_32, int, int, int, int, int);
  void (*set_compression_level)(png_structrp, int);
  void (*write_info)(png_structrp, png_const_inforp);
  void (*write_row)(png_structrp, png_const_bytep);
  void (*write_end)(png_structrp, png_inforp);
  void (*error)(png_const_structrp, png_const_charp);
  int ok;
} P;
#endif

#ifdef SM_HAVE_GIF
static struct {
  GifFileType *(*open)(void *, InputFunc, int *);
  int (*slurp)(GifFileType *);
  int (*close)(GifFileType *, int *);
  const char *(*error_string)(int);
  int (*gcb)(GifFileType *, int, GraphicsControlBlock *);
  int ok;
} G;
#endif

#ifdef SM_HAVE_WEBP
static struct {
  VP8StatusCode (*features)(const uint8_t *, size_t, WebPBitstreamFeatures *, int);
  uint8_t *(*rgb_into)(const uint8_t *, size_t, uint8_t *, size_t, int);
  uint8_t *(*rgba_into)(const uint8_t *, size_t, uint8_t *, size_t, int);
  WebPAnimDecoder *(*anim_new)(const WebPData *, const WebPAnimDecoderOptions *, int);
  int (*anim_info)(const WebPAnimDecoder *, WebPAnimInfo *);
  int (*anim_more)(const WebPAnimDecoder *);
  int (*anim_next)(WebPAnimDecoder *, uint8_t **, int *);
  void (*anim_delete)(WebPAnimDecoder *);
  int ok, anim_ok;
} W;
#endif

static pthread_once_t codec_once = PTHREAD_ONCE_INIT;

static void codec_load(void) {
#ifdef SM_HAVE_JPEG
  void *h = dlopen("libjpeg.so.62", RTLD_NOW | RTLD_LOCAL);
  SM_BIND(h, J.std_error, "jpeg_std_error");
  SM_BIND(h, J.create_d, "jpeg_CreateDecompress");
  SM_BIND(h, J.create_c, "jpeg_CreateCompress");
  SM_BIND(h, J.destroy, "jpeg_destroy");
  SM_BIND(h, J.mem_src, "jpeg_mem_src");
  SM_BIND(h, J.mem_dest, "jpeg_mem_dest");
  SM_BIND(h, J.read_header, "jpeg_read_header");
  SM_BIND(h, J.calc_dims, "jpeg_calc_output_dimensions");
  SM_BIND(h, J.start_d, "jpeg_start_decompress");
  SM_BIND(h, J.read_lines, "jpeg_read_scanlines");
  SM_BIND(h, J.finish_d, "jpeg_finish_decompress");
  SM_BIND(h, J.set_defaults, "jpeg_set_defaults");
  SM_BIND(h, J.set_quality, "jpeg_set_quality");
  SM_BIND(h, J.simple_progression, "jpeg_simple_progression");
  SM_BIND(h, J.start_c, "jpeg_start_compress");
  SM_BIND(h, J.write_marker, "jpeg_write_marker");
  SM_BIND(h, J.write_lines, "jpeg_write_scanlines");
  SM_BIND(h, J.finish_c, "jpeg_finish_compress");
  SM_BIND(h, J.crop_scanline, "jpeg_crop_scanline");
  SM_BIND(h, J.skip_scanlines, "jpeg_skip_scanlines");
  J.ok = J.std_error && J.create_d && J.create_c && J.destroy && J.mem_src && J.mem_dest && J.read_header &&
         J.calc_dims && J.start_d && J.read_lines && J.finish_d && J.set_defaults && J.set_quality &&
         J.simple_progression && J.start_c && J.write_marker && J.write_lines && J.finish_c && J.crop_scanline && J.skip_scanlines;
#endif
#ifdef SM_HAVE_PNG
  void *q = dlopen("libpng16.so.16", RTLD_NOW | RTLD_LOCAL);
  SM_BIND(q, P.create_read, "png_create_read_struct");
  SM_BIND(q, P.create_write, "png_create_write_struct");
  SM_BIND(q, P.create_info, "png_create_info_struct");
  SM_BIND(q, P.destroy_read, "png_destroy_read_struct");
  SM_BIND(q, P.destroy_write, "png_destroy_write_struct");
  SM_BIND(q, P.set_longjmp_fn, "png_set_longjmp_fn");
  SM_BIND(q, P.set_read_fn, "png_set_read_fn");
  SM_BIND(q, P.set_write_fn, "png_set_write_fn");
  SM_BIND(q, P.get_io_ptr, "png_get_io_ptr");
  SM_BIND(q, P.get_error_ptr, "png_get_error_ptr");
  SM_BIND(q, P.read_info, "png_read_info");
  SM_BIND(q, P.get_IHDR, "png_get_IHDR");
  SM_BIND(q, P.get_valid, "png_get_valid");
  SM_BIND(q, P.get_channels, "png_get_channels");
  SM_BIND(q, P.set_interlace_handling, "png_set_interlace_handling");
  SM_BIND(q, P.set_tRNS_to_alpha, "png_set_tRNS_to_alpha");
  SM_BIND(q, P.set_add_alpha, "png_set_add_alpha");
  SM_BIND(q, P.set_strip_alpha, "png_set_strip_alpha");
  SM_BIND(q, P.set_strip_16, "png_set_strip_16");
  SM_BIND(q, P.set_packing, "png_set_packing");
  SM_BIND(q, P.set_swap, "png_set_swap");
  SM_BIND(q, P.set_palette_to_rgb, "png_set_palette_to_rgb");
  SM_BIND(q, P.set_expand_gray_1_2_4_to_8, "png_set_expand_gray_1_2_4_to_8");
  SM_BIND(q, P.set_rgb_to_gray, "png_set_rgb_to_gray");
  SM_BIND(q, P.set_gray_to_rgb, "png_set_gray_to_rgb");
  SM_BIND(q, P.read_update_info, "png_read_update_info");
  SM_BIND(q, P.read_row, "png_read_row");
  SM_BIND(q, P.read_end, "png_read_end");
  SM_BIND(q, P.set_IHDR, "png_set_IHDR");
  SM_BIND(q, P.set_compression_level, "png_set_compression_level");
  SM_BIND(q, P.write_info, "png_write_info");
  SM_BIND(q, P.write_row, "png_write_row");
  SM_BIND(q, P.write_end, "png_write_end");
  SM_BIND(q, P.error, "png_error");
  P.ok = P.create_read && P.create_write && P.create_info && P.destroy_read && P.destroy_write &&
         P.set_longjmp_fn && P.set_read_fn && P.set_write_fn && P.get_io_ptr && P.get_error_ptr && P.read_info &&
         P.get_IHDR && P.get_valid && P.get_channels && P.set_interlace_handling && P.set_tRNS_to_alpha &&
         P.set_add_alpha && P.set_strip_alpha && P.set_strip_16 && P.set_packing && P.set_swap &&
         P.set_palette_to_rgb && P.set_expand_gray_1_2_4_to_8 && P.set_rgb_to_gray && P.set_gray_to_rgb &&
         P.read_update_info && P.read_row && P.read_end && P.set_IHDR && P.set_compression_level &&
         P.write_info && P.write_row && P.write_end && P.error;
#endif
#ifdef SM_HAVE_GIF
  void *g = dlopen("libgif.so.7", RTLD_NOW | RTLD_LOCAL);
  SM_BIND(g, G.open, "DGifOpen");
  SM_BIND(g, G.slurp, "DGifSlurp");
  SM_BIND(g, G.close, "DGifCloseFile");
  SM_BIND(g, G.error_string, "GifErrorString");
  SM_BIND(g, G.gcb, "DGifSavedExtensionToGCB");
  G.ok = G.open && G.slurp && G.close && G.error_string && G.gcb;
#endif
#ifdef SM_HAVE_WEBP
  void *w = dlopen("libwebp.so.7", RTLD_NOW | RTLD_LOCAL), *wd = dlopen("libwebpdemux.so.2", RTLD_NOW | RTLD_LOCAL);
  SM_BIND(w, W.features, "WebPGetFeaturesInternal");
  SM_BIND(w, W.rgb_into, "WebPDecodeRGBInto");
  SM_BIND(w, W.rgba_into, "WebPDecodeRGBAInto");
  SM_BIND(wd, W.anim_new, "WebPAnimDecoderNewInternal");
  SM_BIND(wd, W.anim_info, "WebPAnimDecoderGetInfo");
  SM_BIND(wd, W.anim_more, "WebPAnimDecoderHasMoreFrames");
  SM_BIND(wd, W.anim_next, "WebPAnimDecoderGetNext");
  SM_BIND(wd, W.anim_delete, "WebPAnimDecoderDelete");
  W.ok = W.features && W.rgb_into && W.rgba_into;
  W.anim_ok = W.anim_new && W.anim_info && W.anim_more && W.anim_next && W.anim_delete;
#endif
}

static sm_status *need_jpeg(void) {
  pthread_once(&codec_once, codec_load);
#ifdef SM_HAVE_JPEG
  if (J.ok) return NULL;
#endif
  return sm_status_new(SM_UNIMPLEMENTED, "JPEG codec unavailable: libjpeg.so.62 (libjpeg62-turbo) could not be loaded%s",
#ifdef SM_HAVE_JPEG
                       ""
#else
                       " (built without jpeglib.h)"
#endif
  );
}

static sm_status *need_png(void) {
  pthread_once(&codec_once, codec_load);
#ifdef SM_HAVE_PNG
  if (P.ok) return NULL;
#endif
  return sm_status_new(SM_UNIMPLEMENTED, "PNG codec unavailable: libpng16.so.16 could not be loaded%s",
#ifdef SM_HAVE_PNG
                       ""
#else
                       " (built without png.h)"
#endif
  );
}

static sm_status *need_gif(void) {
  pthread_once(&codec_once, codec_load);
#ifdef SM_HAVE_GIF
  if (G.ok) return NULL;
#endif
  return sm_status_new(SM_UNIMPLEMENTED, "GIF codec unavailable: libgif.so.7 (giflib) could not be loaded%s",
#ifdef SM_HAVE_GIF
                       ""
#else
                       " (built without gif_lib.h)"
#endif
  );
}

static sm_status *need_webp(void) {
  pthread_once(&codec_once, codec_load);
#ifdef SM_HAVE_WEBP
  if (W.ok) return NULL;
#endif
  return sm_status_new(SM_UNIMPLEMENTED, "WebP codec unavailable: libwebp.so.7 could not be loaded%s",
#ifdef SM_HAVE_WEBP
                       ""
#else
                       " (built without webp/decode.h)"
#endif
  );
}

/* ---- decoding ------------------------------------------------------------------------------ */

enum { OP_DECODE_IMAGE, OP_DECODE_JPEG, OP_DECODE_PNG, OP_DECODE_GIF, OP_DECODE_BMP, OP_DECODE_WEBP, OP_DECODE_CROP };
static const char *const op_names[] = {"DecodeImage", "DecodeJpeg", "DecodePng", "DecodeGif", "DecodeBmp", "DecodeWebP", "DecodeAndCropJpeg"};

typedef struct decode_state {
  int op, channels, dtype, ratio, fancy, dct; /* dct: 0 fast (TF's default), 1 accurate */
  int expand_animations;
} decode_state;

static sm_status *decode_prepare_op(const sm_node *node, void **state, int op) {
  decode_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->op = op, st->dtype = SM_UINT8, st->ratio = 1, st->fancy = 1;
  st->expand_animations = 1; /* TF's default for the ops without the attr */
  int64_t v;
  sm_status *s = NULL;
  if (op == OP_DECODE_GIF) st->channels = 3; /* DecodeGif has no channels attr: 3 */
  else if (sm__node_attr(node, "channels") && !(s = sm__node_attr_int(node, "channels", &v))) st->channels = (int)v;
  /* TF reads dtype for DecodePng and DecodeImage only */
  if (!s && (op == OP_DECODE_PNG || op == OP_DECODE_IMAGE) && sm__node_attr(node, "dtype"))
    s = sm__node_attr_type(node, "dtype", &st->dtype);
  if (!s && (op == OP_DECODE_JPEG || op == OP_DECODE_CROP)) {
    if (sm__node_attr(node, "ratio") && !(s = sm__node_attr_int(node, "ratio", &v))) st->ratio = (int)v;
    if (!s && sm__node_attr(node, "fancy_upscaling")) s = sm__node_attr_bool(node, "fancy_upscaling", &st->fancy);
    const char *d = "";
    size_t dl = 0;
    if (!s && sm__node_attr(node, "dct_method")) s = sm__node_attr_string(node, "dct_method", &d, &dl);
    if (!s) {
      if (dl == 16 && !memcmp(d, "INTEGER_ACCURATE", 16)) st->dct = 1;
      else if (dl == 0 || (dl == 12 && !memcmp(d, "INTEGER_FAST", 12))) st->dct = 0;
      else s = sm_status_new(SM_INVALID_ARGUMENT, "dct_method must be one of 'INTEGER_FAST', 'INTEGER_ACCURATE' or '', got '%.*s'", (int)(dl > 40 ? 40 : dl), d);
    }
    if (!s && st->ratio != 1 && st->ratio != 2 && st->ratio != 4 && st->ratio != 8)
      s = sm_status_new(SM_INVALID_ARGUMENT, "ratio must be 1, 2, 4, or 8, got %d", st->ratio);
  }
  if (!s && op == OP_DECODE_IMAGE && sm__node_attr(node, "expand_animations")) s = sm__node_attr_bool(node, "expand_animations", &st->expand_animations);
  if (!s) {
    if (st->channels != 0 && st->channels != 1 && st->channels != 3 && st->channels != 4)
      s = sm_status_new(SM_INVALID_ARGUMENT, "`channels` must be 0, 1, 3 or 4 but got %d", st->channels);
    else if (st->dtype != SM_UINT8 && st->dtype != SM_UINT16 && st->dtype != SM_FLOAT)
      s = sm_status_new(SM_INVALID_ARGUMENT, "dtype must be uint8, uint16 or float32, not %s", sm_dtype_name(st->dtype));
  }
  if (s) {
    sm__free(st);
    return s;
  }
  *state = st;
  return NULL;
}
static sm_status *decode_image_prepare(const sm_node *n, void **s) { return decode_prepare_op(n, s, OP_DECODE_IMAGE); }
static sm_status *decode_jpeg_prepare(const sm_node *n, void **s) { return decode_prepare_op(n, s, OP_DECODE_JPEG); }
static sm_status *decode_png_prepare(const sm_node *n, void **s) { return decode_prepare_op(n, s, OP_DECODE_PNG); }
static sm_status *decode_gif_prepare(const sm_node *n, void **s) { return decode_prepare_op(n, s, OP_DECODE_GIF); }
static sm_status *decode_bmp_prepare(const sm_node *n, void **s) { return decode_prepare_op(n, s, OP_DECODE_BMP); }
static sm_status *decode_webp_prepare(const sm_node *n, void **s) { return decode_prepare_op(n, s, OP_DECODE_WEBP); }
static sm_status *decode_crop_prepare(const sm_node *n, void **s) { return decode_prepare_op(n, s, OP_DECODE_CROP); }

/* The decoded pixels before the dtype conversion: 8 or 16 bits per sample. */
typedef struct raw_image {
  int64_t n, h, w, c; /* n: frames (GIF), else 1 */
  int bits;
  unsigned char *px; /* sm__kctx_scratch */
} raw_image;

#if defined(SM_HAVE_JPEG) || defined(SM_HAVE_PNG) || defined(SM_HAVE_WEBP)
static sm_status *check_size(int64_t h, int64_t w, int64_t c) {
  if (h <= 0 || w <= 0 || h > CODEC_MAX_PIXELS || w > CODEC_MAX_PIXELS || h * w > CODEC_MAX_PIXELS / c)
    return sm_status_new(SM_INVALID_ARGUMENT, "image too large or empty: %" PRId64 "x%" PRId64 "x%" PRId64, h, w, c);
  return NULL;
}
#endif

#ifdef SM_HAVE_JPEG
typedef struct jerr_t {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
} jerr_t;

static void jerr_exit(j_common_ptr ci) { longjmp(((jerr_t *)ci->err)->jb, 1); }
static void jerr_quiet(j_common_ptr ci, int level) {
  /* warnings (a truncated stream among them) count as failures, as TF's decoder treats them
   * unless try_recover_truncated */
  if (level < 0) ((jerr_t *)ci->err)->pub.num_warnings++;
}

/* The decompress object lives in a struct of its own so that nothing longjmp skips is a local. */
typedef struct jdec {
  struct jpeg_decompress_struct ci;
  jerr_t err;
  unsigned char *px, *cmyk; /* cmyk: one CMYK scanline, converted to RGB as TF converts it */
} jdec;

/* crop: DecodeAndCropJpeg's window (y, x, height, width) or NULL; decoded as TF's jpeg_mem.cc does it,
 * jpeg_crop_scanline to the iMCU column and jpeg_skip_scanlines over the rows above. */
static sm_status *jpeg_decode(const decode_state *st, const unsigned char *data, size_t n, sm_kctx *ctx, raw_image *out, const int32_t *crop) {
  if (st->channels == 4) return sm_status_new(SM_INVALID_ARGUMENT, "JPEG does not support 4 channels");
  if (st->channels == 2) return sm_status_new(SM_INVALID_ARGUMENT, "JPEG does not support 2 channels");
  sm_status *s = NULL;
  jdec *d = sm__calloc(sizeof *d);
  if (!d) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  d->ci.err = J.std_error(&d->err.pub);
  d->err.pub.error_exit = jerr_exit;
  d->err.pub.emit_message = jerr_quiet;
  volatile int created = 0;
  if (setjmp(d->err.jb)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "jpeg::Uncompress failed. Invalid JPEG data or crop window.");
    goto done;
  }
  J.create_d(&d->ci, JPEG_LIB_VERSION, sizeof d->ci);
  created = 1;
  J.mem_src(&d->ci, data, (unsigned long)n);
  J.read_header(&d->ci, TRUE);
  /* TF's jpeg_mem.cc: components min(num_components, 3); a CMYK / YCCK image is decoded to CMYK
   * (libjpeg converts YCCK) and each scanline to RGB, Adobe's inverted CMYK as k * c / 255, plain
   * CMYK as (255 - k) * (255 - c) / 255 */
  int comps = st->channels ? st->channels : (d->ci.num_components < 3 ? d->ci.num_components : 3);
  if (comps != 1 && comps != 3) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid components value %d", comps);
    goto done;
  }
  int cmyk = comps == 3 && (d->ci.jpeg_color_space == JCS_CMYK || d->ci.jpeg_color_space == JCS_YCCK);
  d->ci.out_color_space = comps == 1 ? JCS_GRAYSCALE : cmyk ? JCS_CMYK : JCS_RGB;
  d->ci.scale_num = 1;
  d->ci.scale_denom = (unsigned)st->ratio;
  d->ci.dct_method = st->dct ? JDCT_ISLOW : JDCT_IFAST;
  d->ci.do_fancy_upsampling = st->fancy ? TRUE : FALSE;
  J.calc_dims(&d->ci);
  int64_t h = d->ci.output_height, w = d->ci.output_width;
  if ((s = check_size(h, w, comps))) goto done;
  J.start_d(&d->ci);
  int64_t th = h, tw = w, skipped = 0;
  if (crop) {
    th = crop[2], tw = crop[3];
    if (!(crop[3] > 0 && crop[2] > 0 && crop[1] >= 0 && crop[0] >= 0 && (int64_t)crop[0] + crop[2] <= h && (int64_t)crop[1] + crop[3] <= w)) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "jpeg::Uncompress failed. Invalid JPEG data or crop window.");
      goto done;
    }
    JDIMENSION xo = (JDIMENSION)crop[1], cw = (JDIMENSION)crop[3];
    J.crop_scanline(&d->ci, &xo, &cw);
    skipped = J.skip_scanlines(&d->ci, (JDIMENSION)crop[0]);
  }
  d->px = sm__kctx_scratch(ctx, (size_t)(th * tw * comps), &s);
  if (!d->px) goto done;
  const int64_t ow = d->ci.output_width, lc = cmyk ? 4 : comps, shift = (ow - tw) * lc; /* the iMCU-aligned start */
  if ((cmyk || ow != tw) && !(d->cmyk = sm__kctx_scratch(ctx, (size_t)(ow * lc), &s))) goto done;
  if ((int)d->ci.output_components != (cmyk ? 4 : comps)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "jpeg::Uncompress failed. Invalid JPEG data or crop window.");
    goto done;
  }
  while (d->ci.output_scanline < skipped + th) {
    JSAMPROW row = d->px + (size_t)(d->ci.output_scanline - skipped) * (size_t)(tw * comps), line = d->cmyk ? d->cmyk : row;
    if (J.read_lines(&d->ci, &line, 1) != 1 || d->err.pub.num_warnings) break;
    if (d->cmyk && !cmyk) memcpy(row, line + shift, (size_t)(tw * comps));
    for (int64_t i = 0; cmyk && i < tw; i++) {
      const unsigned char *q = line + shift + 4 * i;
      const int c = q[0], m = q[1], y = q[2], k = q[3];
      if (d->ci.saw_Adobe_marker)
        row[3 * i] = (unsigned char)(k * c / 255), row[3 * i + 1] = (unsigned char)(k * m / 255), row[3 * i + 2] = (unsigned char)(k * y / 255);
      else
        row[3 * i] = (unsigned char)((255 - k) * (255 - c) / 255), row[3 * i + 1] = (unsigned char)((255 - k) * (255 - m) / 255),
        row[3 * i + 2] = (unsigned char)((255 - k) * (255 - y) / 255);
    }
  }
  if (d->ci.output_scanline < skipped + th || d->err.pub.num_warnings) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "jpeg::Uncompress failed. Invalid JPEG data or crop window.");
    goto done;
  }
  if (crop && d->ci.output_scanline < d->ci.output_height) J.skip_scanlines(&d->ci, d->ci.output_height - d->ci.output_scanline);
  J.finish_d(&d->ci);
  out->h = th, out->w = tw, out->c = comps, out->bits = 8, out->px = d->px;
  d->px = NULL;
done:
  if (created) J.destroy((j_common_ptr)&d->ci);
  if (d->px) sm__kctx_scratch_free(ctx, d->px);
  if (d->cmyk) sm__kctx_scratch_free(ctx, d->cmyk);
  sm__free(d);
  return s;
}
#endif

#ifdef SM_HAVE_PNG
typedef struct pdec {
  png_structp png;
  png_infop info;
  const unsigned char *data;
  size_t n, at;
  unsigned char *px;
} pdec;

/* back to the setjmp of the decode or encode (libpng's own handler would print first) */
static void png_on_error(png_structp p, png_const_charp msg) {
  (void)msg;
  longjmp(*P.set_longjmp_fn(p, longjmp, sizeof(jmp_buf)), 1);
}
static void png_on_warning(png_structp p, png_const_charp msg) { (void)p, (void)msg; }
static void png_reader(png_structp p, png_bytep buf, size_t len) {
  pdec *d = P.get_io_ptr(p);
  if (len > d->n - d->at) P.error(p, "read past the end");
  memcpy(buf, d->data + d->at, len);
  d->at += len;
}

static sm_status *png_decode(const decode_state *st, const unsigned char *data, size_t n, sm_kctx *ctx, raw_image *out) {
  int bits = st->dtype == SM_UINT8 ? 8 : 16;
  sm_status *s = NULL;
  pdec *d = sm__calloc(sizeof *d);
  if (!d) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  d->data = data, d->n = n;
  d->png = P.create_read(PNG_LIBPNG_VER_STRING, d, png_on_error, png_on_warning);
  if (d->png) d->info = P.create_info(d->png);
  if (!d->png || !d->info) {
    s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
    goto done;
  }
  volatile int64_t h = 0, w = 0, c = 0;
  volatile int synth16 = 0, header_read = 0;
  if (setjmp(*P.set_longjmp_fn(d->png, longjmp, sizeof(jmp_buf)))) {
    if (header_read) s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid PNG data, size %zu", n);
    else s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid PNG. Failed to initialize decoder.");
    goto done;
  }
  P.set_read_fn(d->png, d, png_reader);
  P.read_info(d->png, d->info);
  png_uint_32 pw, ph;
  int depth, ctype;
  P.get_IHDR(d->png, d->info, &pw, &ph, &depth, &ctype, NULL, NULL, NULL);
  int ch = st->channels;
  int trns = P.get_valid(d->png, d->info, PNG_INFO_tRNS) != 0;
  if (ch == 0) ch = ctype == PNG_COLOR_TYPE_PALETTE ? (trns ? 4 : 3) : P.get_channels(d->png, d->info);
  int has_alpha = (ctype & PNG_COLOR_MASK_ALPHA) != 0;
  if ((ch & 1) == 0) {
    if (!has_alpha) {
      if (trns) P.set_tRNS_to_alpha(d->png);
      else P.set_add_alpha(d->png, (1u << depth) - 1, PNG_FILLER_AFTER);
    }
  } else if (has_alpha || trns) {
    P.set_strip_alpha(d->png);
  }
  if (depth > 8 && bits <= 8) P.set_strip_16(d->png);
  synth16 = depth <= 8 && bits == 16;
  P.set_packing(d->png);
  int passes = P.set_interlace_handling(d->png);
  if (bits > 8) P.set_swap(d->png);
  if (ctype == PNG_COLOR_TYPE_PALETTE) P.set_palette_to_rgb(d->png);
  int is_gray = !(ctype & PNG_COLOR_MASK_COLOR);
  if (is_gray && depth < 8) P.set_expand_gray_1_2_4_to_8(d->png);
  if (ch < 3) {
    if (!is_gray) P.set_rgb_to_gray(d->png, 1, 0.299, 0.587);
  } else if (is_gray) {
    P.set_gray_to_rgb(d->png);
  }
  P.read_update_info(d->png, d->info);
  header_read = 1;
  h = ph, w = pw, c = ch;
  if ((s = check_size(h, w, c))) goto done;
  size_t row = (size_t)(w * c) * (bits / 8), row8 = synth16 ? (size_t)(w * c) : row;
  d->px = sm__kctx_scratch(ctx, row * (size_t)h, &s);
  if (!d->px) goto done;
  for (int pass = 0; pass < passes; pass++)
    for (int64_t y = 0; y < h; y++) P.read_row(d->png, d->px + (size_t)y * row, NULL);
  (void)row8;
  if (synth16) /* 8-bit samples read at the start of each 16-bit row: widen in place, backwards */
    for (int64_t y = 0; y < h; y++) {
      unsigned char *r = d->px + (size_t)y * row;
      uint16_t *o = (uint16_t *)r;
      for (int64_t i = w * c; i-- > 0;) o[i] = (uint16_t)(r[i] * 257u);
    }
  out->h = h, out->w = w, out->c = c, out->bits = bits, out->px = d->px;
  d->px = NULL;
done:
  if (d->png) P.destroy_read(&d->png, d->info ? &d->info : NULL, NULL);
  if (d->px) sm__kctx_scratch_free(ctx, d->px);
  sm__free(d);
  return s;
}
#endif

/* ---- GIF (giflib) ---------------------------------------------------------------------------- */

#ifdef SM_HAVE_GIF
/* The most bytes a GIF decode may make: its frames' index rasters, or the RGB output. */
#define GIF_MAX_BYTES ((int64_t)1 << 31)

/* Walks the GIF's blocks (header, colour tables, extensions, image descriptors) without decoding,
 * so that a descriptor claiming a huge frame, or frames whose canvas x count is huge, is refused
 * before giflib allocates for it. A structure it cannot follow stops the walk: giflib then fails
 * on the same bytes (the walk is only a guard). */
static sm_status *gif_prescan(const unsigned char *p, size_t n, int expand, int64_t *nframes, int *last_whole) {
  size_t at = 13;
  *nframes = 0, *last_whole = 0;
  if (n < 13) return NULL;
  if (p[10] & 0x80) at += (size_t)3 << ((p[10] & 7) + 1);
  int64_t frames = 0, raster = 0, mw = 0, mh = 0;
  while (at < n) {
    unsigned char b = p[at++];
    if (b == 0x21) { /* extension: label, sub-blocks */
      if (at++ >= n) break;
      while (at < n && p[at]) at += (size_t)p[at] + 1;
      at++;
    } else if (b == 0x2c) { /* image descriptor */
      if (n - at < 9) break;
      int64_t w = p[at + 4] | p[at + 5] << 8, h = p[at + 6] | p[at + 7] << 8;
      unsigned char f = p[at + 8];
      at += 9;
      if (f & 0x80) at += (size_t)3 << ((f & 7) + 1);
      at++; /* LZW minimum code size */
      while (at < n && p[at]) at += (size_t)p[at] + 1;
      at++;
      frames++, raster += w * h;
      *nframes = frames, *last_whole = at <= n; /* its data blocks and their terminator all there */
      if (w > mw) mw = w;
      if (h > mh) mh = h;
      if (raster > GIF_MAX_BYTES || (expand ? frames : 1) * mw * mh * 3 > GIF_MAX_BYTES)
        return sm_status_new(SM_INVALID_ARGUMENT, "GIF too large to decode here: %" PRId64 " frames, the largest %" PRId64 "x%" PRId64,
                             frames, mh, mw);
    } else {
      break; /* the trailer, or bytes giflib will refuse */
    }
  }
  return NULL;
}

typedef struct gif_in {
  const unsigned char *p;
  size_t left;
} gif_in;

static int gif_reader(GifFileType *f, GifByteType *buf, int size) {
  gif_in *in = f->UserData;
  if (!in || size < 0) return 0;
  if ((size_t)size > in->left) size = (int)in->left;
  memcpy(buf, in->p, (size_t)size);
  in->p += size, in->left -= (size_t)size;
  return size;
}

static const char *gif_err(int code) {
  const char *e = G.error_string(code);
  return e ? e : "Unknown error";
}

/* TF's gif::Decode: all frames (or the first when !expand) on a canvas of the largest frame's
 * width and height, RGB. */
static sm_status *gif_decode(const unsigned char *data, size_t n, int expand, sm_kctx *ctx, raw_image *out) {
  int64_t scanned = 0;
  int last_whole = 0;
  sm_status *s = gif_prescan(data, n, expand, &scanned, &last_whole);
  if (s) return s;
  int code = D_GIF_SUCCEEDED;
  gif_in in = {data, n};
  GifFileType *f = G.open(&in, gif_reader, &code);
  if (code != D_GIF_SUCCEEDED || !f) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid GIF data (size %zu), failed to open gif file: %s", n, gif_err(code));
    if (f) G.close(f, &code);
    return s;
  }
  if (G.slurp(f) != GIF_OK &&
      /* TF goes on with the frames read when the last one got its raster (a GIF without its
       * trailer decodes); but when that raster's decode failed, giflib leaves its unread part
       * uninitialised: refused here, not garbage */
      !(f->ImageCount > 0 && f->SavedImages[f->ImageCount - 1].RasterBits && f->ImageCount == scanned && last_whole &&
        f->Error != D_GIF_ERR_IMAGE_DEFECT && f->Error != D_GIF_ERR_EOF_TOO_SOON && f->Error != D_GIF_ERR_DATA_TOO_BIG)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid GIF data (size %zu), failed to slurp gif file: %s", n, gif_err(f->Error));
    goto done;
  }
  if (f->ImageCount <= 0) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid GIF data (size %zu), gif file does not contain any image", n);
    goto done;
  }
  int64_t w = 0, h = 0, nf = expand ? f->ImageCount : 1;
  for (int k = 0; k < f->ImageCount; k++) {
    if (f->SavedImages[k].ImageDesc.Width > w) w = f->SavedImages[k].ImageDesc.Width;
    if (f->SavedImages[k].ImageDesc.Height > h) h = f->SavedImages[k].ImageDesc.Height;
  }
  if (nf * w * h * 3 > GIF_MAX_BYTES) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "GIF too large to decode here: %" PRId64 " frames of %" PRId64 "x%" PRId64, nf, h, w);
    goto done;
  }
  size_t fsz = (size_t)(w * h * 3);
  unsigned char *px = sm__kctx_scratch(ctx, fsz * (size_t)nf + 1, &s);
  if (!px) goto done;
  for (int64_t k = 0; k < nf && !s; k++) {
    unsigned char *dst = px + (size_t)k * fsz;
    const SavedImage *im = &f->SavedImages[k];
    const GifImageDesc *d = &im->ImageDesc;
    GraphicsControlBlock gcb;
    G.gcb(f, (int)k, &gcb);
    int64_t top = d->Top, left = d->Left, bottom = (int64_t)d->Top + d->Height, right = (int64_t)d->Left + d->Width;
    if (k > 0) memcpy(dst, dst - fsz, fsz);
    if (d->Left != 0 || d->Top != 0 || d->Width != w || d->Height != h) {
      if (k == 0) memset(dst, 0, fsz);
      if (right > w) right = w;
      if (bottom > h) bottom = h;
    }
    const ColorMapObject *cm = d->ColorMap ? d->ColorMap : f->SColorMap;
    if (!cm) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid GIF data (size %zu), missing color map for frame %" PRId64, n, k);
      break;
    }
    for (int64_t i = top; i < bottom && !s; i++)
      for (int64_t j = left; j < right; j++) {
        int ci = im->RasterBits[(i - d->Top) * d->Width + (j - d->Left)];
        unsigned char *o = dst + (size_t)(i * w + j) * 3;
        if (ci == gcb.TransparentColor) {
          if (k == 0) o[0] = o[1] = o[2] = 0;
          continue;
        }
        if (ci >= cm->ColorCount) {
          s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid GIF data (size %zu), found color index %d outside of color map range %d",
                            n, ci, cm->ColorCount);
          break;
        }
        o[0] = cm->Colors[ci].Red, o[1] = cm->Colors[ci].Green, o[2] = cm->Colors[ci].Blue;
      }
  }
  if (s) {
    sm__kctx_scratch_free(ctx, px);
    goto done;
  }
  out->n = nf, out->h = h, out->w = w, out->c = 3, out->bits = 8, out->px = px;
done:
  G.close(f, &code);
  return s;
}
#endif

/* ---- BMP (TF's own parser, decode_image_op.cc) ------------------------------------------------ */

static int32_t rd32(const unsigned char *p) { return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24); }

static sm_status *bmp_decode(const decode_state *st, const unsigned char *p, size_t n, sm_kctx *ctx, raw_image *out) {
  if (n < 32)
    return sm_status_new(SM_INVALID_ARGUMENT, "Incomplete bmp content, requires at least 32 bytes to find the header size, "
                                              "width, height, and bpp, got %zu bytes", n);
  int32_t header = rd32(p + 10), width = rd32(p + 18), height = rd32(p + 22);
  int16_t bpp = (int16_t)(p[28] | p[29] << 8);
  int ic = bpp / 8;
  if (ic != 1 && ic != 3 && ic != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "Number of channels inherent in the image must be 1, 3 or 4, was %d", ic);
  int oc = st->channels ? st->channels : ic;
  if (width <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Width must be positive");
  if (height == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Height must be nonzero");
  if (header < 0) return sm_status_new(SM_INVALID_ARGUMENT, "header size must be nonnegative");
  int64_t ah = height < 0 ? -(int64_t)height : height;
  if ((int64_t)width * ah >= INT32_MAX / 8) return sm_status_new(SM_INVALID_ARGUMENT, "Total possible pixel bytes must be less than 2^30");
  int64_t row = ((int64_t)ic * width + 3) / 4 * 4;
  int64_t diff = (int64_t)n - header - row * ah;
  if (diff != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input size should match (header_size + row_size * abs_height) but they differ by %d",
                         (int)(int32_t)(uint32_t)(uint64_t)diff); /* TF's int */
  /* the pixels now fit: header + row * ah == n */
  sm_status *s = NULL;
  unsigned char *px = sm__kctx_scratch(ctx, (size_t)(ah * width * oc) + 1, &s);
  if (!px) return s;
  const unsigned char *in = p + header;
  for (int64_t i = 0; i < ah; i++) {
    const unsigned char *r = in + (size_t)((height < 0 ? i : ah - 1 - i) * row);
    unsigned char *o = px + (size_t)(i * width * oc);
    for (int64_t j = 0; j < width; j++, o += oc, r += ic) {
      if (ic == 1) {
        o[0] = r[0];
        if (oc >= 3) o[1] = o[2] = r[0];
        if (oc == 4) o[3] = 255;
      } else {
        o[0] = r[2], o[1] = r[1], o[2] = r[0];
        if (oc == 4) o[3] = ic == 4 ? r[3] : 255;
      }
    }
  }
  out->n = 1, out->h = ah, out->w = width, out->c = oc, out->bits = 8, out->px = px;
  return NULL;
}

/* ---- WebP (libwebp, TF's webp_io.cc) ---------------------------------------------------------- */

#ifdef SM_HAVE_WEBP
/* A still image as WebPDecodeRGB(A)Into, or an animation's frames (RGBA canvases) through
 * libwebpdemux's WebPAnimDecoder (all, or the first when !expand); *rank4 as TF's shapes. */
static sm_status *webp_decode(const decode_state *st, const unsigned char *p, size_t n, sm_kctx *ctx, raw_image *out, int *rank4) {
  if (st->channels != 0 && st->channels != 3 && st->channels != 4)
    return sm_status_new(SM_INVALID_ARGUMENT, "WebP only supports 3 or 4 channels");
  if (st->dtype != SM_UINT8) return sm_status_new(SM_INVALID_ARGUMENT, "WebP only supports uint8 for dtype");
  WebPBitstreamFeatures f;
  if (W.features(p, n, &f, WEBP_DECODER_ABI_VERSION) != VP8_STATUS_OK)
    return sm_status_new(SM_INVALID_ARGUMENT, "Failed to decode WebP header.");
  int64_t w = f.width, h = f.height, c = f.has_alpha ? 4 : 3;
  if (st->channels != 0 && st->channels != c) return sm_status_new(SM_INVALID_ARGUMENT, "Number of channels requested does not match input");
  if (w <= 0 || h <= 0) return sm_status_new(SM_INVALID_ARGUMENT, "Got negative width or height.");
  if (w * h > INT32_MAX) return sm_status_new(SM_INVALID_ARGUMENT, "Width x Height > 32-bits");
  sm_status *s = NULL;
  *rank4 = st->expand_animations;
  if (!f.has_animation) {
    if ((s = check_size(h, w, c))) return s;
    size_t row = (size_t)(w * c), sz = row * (size_t)h;
    unsigned char *px = sm__kctx_scratch(ctx, sz, &s);
    if (!px) return s;
    if (!(c == 3 ? W.rgb_into : W.rgba_into)(p, n, px, sz, (int)row)) {
      sm__kctx_scratch_free(ctx, px);
      return sm_status_new(SM_INVALID_ARGUMENT, "Failed to decode WebP image.");
    }
    out->n = 1, out->h = h, out->w = w, out->c = c, out->bits = 8, out->px = px;
    return NULL;
  }
  if (st->channels != 0 && st->channels != 4) return sm_status_new(SM_INVALID_ARGUMENT, "WebP Animation must be 4 channel RGBA");
  if (!W.anim_ok) return sm_status_new(SM_UNIMPLEMENTED, "WebP animations need libwebpdemux.so.2, which could not be loaded");
  WebPData data = {p, n};
  WebPAnimDecoder *dec = W.anim_new(&data, NULL, WEBP_DEMUX_ABI_VERSION);
  if (!dec) return sm_status_new(SM_INVALID_ARGUMENT, "Failed to decode WebP Animation: failed to decode WebP Animation");
  WebPAnimInfo info;
  unsigned char *px = NULL;
  if (!W.anim_info(dec, &info)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Failed to decode WebP Animation: failed to get WebP Animation Info");
    goto done;
  }
  int64_t cw = info.canvas_width, chh = info.canvas_height, nf = st->expand_animations ? info.frame_count : 1;
  if (cw <= 0 || chh <= 0 || nf <= 0 || nf * cw * chh > CODEC_MAX_PIXELS / 4) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "WebP animation too large or empty: %" PRId64 " frames of %" PRId64 "x%" PRId64, nf, chh, cw);
    goto done;
  }
  size_t fsz = (size_t)(cw * chh * 4);
  if (!(px = sm__kctx_scratch(ctx, fsz * (size_t)nf, &s))) goto done;
  int64_t k = 0;
  while (k < nf && W.anim_more(dec)) {
    uint8_t *buf;
    int ts;
    if (!W.anim_next(dec, &buf, &ts)) {
      s = sm_status_new(SM_INVALID_ARGUMENT, "Failed to decode WebP Animation: failed to decode frame: %" PRId64, k);
      goto done;
    }
    memcpy(px + (size_t)k * fsz, buf, fsz);
    k++;
  }
  if (k != nf) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Failed to decode WebP Animation: only read %" PRId64 " of %" PRId64 " frames", k, nf);
    goto done;
  }
  out->n = nf, out->h = chh, out->w = cw, out->c = 4, out->bits = 8, out->px = px;
  px = NULL;
done:
  if (px) sm__kctx_scratch_free(ctx, px);
  W.anim_delete(dec);
  return s;
}
#endif

static sm_status *decode_compute(const void *state, sm_kctx *ctx) {
  const decode_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  if (sm_tensor_dtype(x) != SM_STRING || sm_tensor_rank(x) != 0) {
    char b[64];
    return sm_status_new(SM_INVALID_ARGUMENT, "`contents` must be scalar but got shape%s",
                         sm_shape_str(sm_tensor_rank(x), sm_tensor_dims(x), b, sizeof b));
  }
  size_t n;
  const unsigned char *p = (const unsigned char *)sm_tensor_string(x, 0, &n);
  raw_image im = {0};
  sm_status *s = NULL;
  if (n == 0) return sm_status_new(SM_INVALID_ARGUMENT, "Input is empty.");
  const char *opn = op_names[st->op];
  int is_jpeg = n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff;
  int is_png = n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8);
  int is_gif = n >= 4 && !memcmp(p, "GIF8", 4);
  int is_bmp = n >= 2 && !memcmp(p, "BM", 2);
  int rank4 = st->op == OP_DECODE_GIF; /* DecodeGif gives [1, h, w, c] for a JPEG or PNG */
  if (is_jpeg) {
    if (st->channels == 4) return sm_status_new(SM_INVALID_ARGUMENT, "JPEG does not support 4 channels");
    if (st->op == OP_DECODE_BMP)
      return sm_status_new(SM_INVALID_ARGUMENT, "Trying to decode JPEG format using DecodeBmp op. Use `decode_jpeg` or `decode_image` instead.");
    const int32_t *crop = NULL;
    if (st->op == OP_DECODE_CROP) {
      const sm_tensor *cw = sm__kctx_input(ctx, 1);
      char b[64];
      if (sm_tensor_rank(cw) != 1)
        return sm_status_new(SM_INVALID_ARGUMENT, "crop_window must be 1-D, got shape %s", sm_shape_str(sm_tensor_rank(cw), sm_tensor_dims(cw), b, sizeof b));
      if (sm_tensor_dims(cw)[0] != 4 || sm_tensor_dtype(cw) != SM_INT32)
        return sm_status_new(SM_INVALID_ARGUMENT, "crop_size must have four elements %s", sm_shape_str(1, sm_tensor_dims(cw), b, sizeof b));
      crop = sm_tensor_data(cw);
    }
    if ((s = need_jpeg())) return s;
#ifdef SM_HAVE_JPEG
    decode_state js = *st;
    if (st->dtype != SM_UINT8) js.dtype = SM_UINT8;
    s = jpeg_decode(&js, p, n, ctx, &im, crop);
#else
    (void)crop;
#endif
  } else if (is_png) {
    if ((s = need_png())) return s;
#ifdef SM_HAVE_PNG
    s = png_decode(st, p, n, ctx, &im);
#endif
    if (!s && st->op == OP_DECODE_BMP) {
      sm__kctx_scratch_free(ctx, im.px);
      return sm_status_new(SM_INVALID_ARGUMENT, "Trying to decode PNG format using DecodeBmp op. Use `decode_png` or `decode_image` instead.");
    }
    if (!s && st->op == OP_DECODE_CROP) {
      sm__kctx_scratch_free(ctx, im.px);
      return sm_status_new(SM_INVALID_ARGUMENT, "DecodeAndCropJpeg operation can run on JPEG only, but detected PNG.");
    }
  } else if (is_gif) {
    if (st->channels != 0 && st->channels != 3)
      return sm_status_new(SM_INVALID_ARGUMENT, "channels must be 0 or 3 for GIF, got %d", st->channels);
    if (st->op == OP_DECODE_BMP)
      return sm_status_new(SM_INVALID_ARGUMENT, "Trying to decode GIF format using DecodeBmp op. Use `decode_gif` or `decode_image` instead.");
    if (st->op == OP_DECODE_CROP) return sm_status_new(SM_INVALID_ARGUMENT, "DecodeAndCropJpeg operation can run on JPEG only, but detected GIF.");
    if ((s = need_gif())) return s;
#ifdef SM_HAVE_GIF
    s = gif_decode(p, n, st->expand_animations, ctx, &im);
#endif
    if (!s && (st->op == OP_DECODE_PNG || st->op == OP_DECODE_JPEG) && im.n != 1) {
      sm__kctx_scratch_free(ctx, im.px);
      return sm_status_new(SM_INVALID_ARGUMENT, "Got %" PRId64 " frames, but animated gifs can only be decoded by tf.io.decode_gif or tf.io.decode_image", im.n);
    }
    if (!s && st->op == OP_DECODE_WEBP) { /* TF's GIF branch allocates for no other op (once the GIF has parsed) */
      sm__kctx_scratch_free(ctx, im.px);
      return sm_status_new(SM_INVALID_ARGUMENT, "Bad op type DecodeWebP");
    }
    rank4 = st->op == OP_DECODE_GIF || (st->op == OP_DECODE_IMAGE && st->expand_animations);
  } else if (is_bmp) {
    if (st->channels == 1) return sm_status_new(SM_INVALID_ARGUMENT, "`channels` must be 0, 3 or 4 for BMP, but got 1");
    if (st->op == OP_DECODE_CROP) return sm_status_new(SM_INVALID_ARGUMENT, "DecodeAndCropJpeg operation can run on JPEG only, but detected BMP.");
    if (st->op != OP_DECODE_BMP && st->op != OP_DECODE_IMAGE)
      return sm_status_new(SM_INVALID_ARGUMENT, "Trying to decode BMP format using a wrong op. Use `decode_bmp` or `decode_image` instead. Op used: %s", opn);
    s = bmp_decode(st, p, n, ctx, &im);
  } else if (n > 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) {
    if ((s = need_webp())) return s;
#ifdef SM_HAVE_WEBP
    s = webp_decode(st, p, n, ctx, &im, &rank4);
#endif
  } else {
    return sm_status_new(SM_INVALID_ARGUMENT, "Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP required.");
  }
  if (s) return s;
  if (!im.n) im.n = 1;
  if (!rank4 && im.n != 1) { /* a 3-D output holds one frame: never copy more into it */
    sm__kctx_scratch_free(ctx, im.px);
    return sm_status_new(SM_INTERNAL, "%s: %" PRId64 " frames decoded for a 3-D output", opn, im.n);
  }
  sm_tensor *y;
  s = rank4 ? sm__kctx_alloc_output_uninit(ctx, 0, st->dtype, 4, (int64_t[]){im.n, im.h, im.w, im.c}, &y)
            : sm__kctx_alloc_output_uninit(ctx, 0, st->dtype, 3, (int64_t[]){im.h, im.w, im.c}, &y);
  if (!s) {
    int64_t m = im.n * im.h * im.w * im.c;
    if (st->dtype == SM_UINT8) {
      memcpy(sm_tensor_data(y), im.px, (size_t)m);
    } else if (st->dtype == SM_UINT16) {
      uint16_t *o = sm_tensor_data(y);
      if (im.bits == 16) memcpy(o, im.px, (size_t)m * 2);
      else /* a JPEG's 8 bits become the high byte, as TF shifts them */
        for (int64_t i = 0; i < m; i++) o[i] = (uint16_t)(im.px[i] << 8);
    } else {
      float *o = sm_tensor_data(y);
      if (im.bits == 16) {
        const uint16_t *q = (const uint16_t *)im.px;
        const float sc = (float)(1.0 / 65535.0);
        for (int64_t i = 0; i < m; i++) o[i] = (float)q[i] * sc;
      } else {
        const float sc = (float)(1.0 / 255.0);
        for (int64_t i = 0; i < m; i++) o[i] = (float)im.px[i] * sc;
      }
    }
  }
  sm__kctx_scratch_free(ctx, im.px);
  return s;
}

/* ---- EncodePng ------------------------------------------------------------------------------- */

typedef struct encode_state {
  int level;                                  /* EncodePng: compression, -1 = zlib's default */
  int quality, progressive, optimize, chroma; /* EncodeJpeg */
  int channels;                               /* EncodeJpeg's format: 0 from the image, 1, 3 */
  int density_unit, xd, yd;
  char *xmp;
  size_t xmp_len;
  int variable_quality; /* EncodeJpegVariableQuality: quality is input 1 */
} encode_state;

static void encode_release(void *p) {
  encode_state *st = p;
  if (st) sm__free(st->xmp);
  sm__free(st);
}

static sm_status *encode_png_prepare(const sm_node *node, void **state) {
  encode_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  int64_t v = -1;
  sm_status *s = sm__node_attr(node, "compression") ? sm__node_attr_int(node, "compression", &v) : NULL;
  if (!s && (v < -1 || v > 9)) s = sm_status_new(SM_INVALID_ARGUMENT, "compression should be in [-1,9], got %" PRId64, v);
  if (s) {
    sm__free(st);
    return s;
  }
  st->level = (int)v;
  *state = st;
  return NULL;
}

#ifdef SM_HAVE_PNG
typedef struct penc {
  png_structp png;
  png_infop info;
  char *buf;
  size_t len, cap;
  sm_kctx *ctx;
  int oom;
} penc;

static void png_writer(png_structp p, png_bytep data, size_t len) {
  penc *e = P.get_io_ptr(p);
  if (len > e->cap - e->len) {
    size_t nc = e->cap * 2 + len + 256;
    sm_status *s = NULL;
    char *nb = sm__kctx_scratch_realloc(e->ctx, e->buf, nc, &s);
    if (!nb) {
      sm_status_free(s);
      e->oom = 1;
      P.error(p, "out of memory");
    }
    e->buf = nb, e->cap = nc;
  }
  memcpy(e->buf + e->len, data, len);
  e->len += len;
}
static void png_flush(png_structp p) { (void)p; }

/* One image [h, w, c] of 8- or 16-bit samples to PNG bytes in e->buf. */
static int png_encode_one(penc *e, const unsigned char *px, int64_t h, int64_t w, int64_t c, int bits, int level) {
  e->png = P.create_write(PNG_LIBPNG_VER_STRING, e, png_on_error, png_on_warning);
  if (e->png) e->info = P.create_info(e->png);
  if (!e->png || !e->info) return 0;
  if (setjmp(*P.set_longjmp_fn(e->png, longjmp, sizeof(jmp_buf)))) return 0;
  static const int ctypes[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  P.set_write_fn(e->png, e, png_writer, png_flush);
  P.set_IHDR(e->png, e->info, (png_uint_32)w, (png_uint_32)h, bits, ctypes[c], PNG_INTERLACE_NONE,
             PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  P.set_compression_level(e->png, level);
  P.write_info(e->png, e->info);
  if (bits == 16) P.set_swap(e->png);
  size_t row = (size_t)(w * c) * (size_t)(bits / 8);
  for (int64_t y = 0; y < h; y++) P.write_row(e->png, px + (size_t)y * row);
  P.write_end(e->png, NULL);
  return 1;
}
#endif

static sm_status *encode_png_compute(const void *state, sm_kctx *ctx) {
  const encode_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(x);
  const int64_t *d = sm_tensor_dims(x);
  char b[128];
  if (r < 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "images must be at least rank 3%s", sm_shape_str(r, d, b, sizeof b));
  if (sm_tensor_dtype(x) != SM_UINT8 && sm_tensor_dtype(x) != SM_UINT16)
    return sm_status_new(SM_INVALID_ARGUMENT, "EncodePng takes uint8 or uint16 images, not %s", sm_dtype_name(sm_tensor_dtype(x)));
  int64_t h = d[r - 3], w = d[r - 2], c = d[r - 1];
  if (c < 1 || c > 4) return sm_status_new(SM_INVALID_ARGUMENT, "image must have 1, 2, 3, or 4 channels, got %" PRId64, c);
  if (h > INT32_MAX || w > INT32_MAX || w * c > INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "image too large to encode: %s", sm_shape_str(r, d, b, sizeof b));
  sm_tensor *y;
  sm_status *s = need_png();
  if (!s) s = sm__kctx_alloc_output(ctx, 0, SM_STRING, r - 3, d, &y);
  if (s) return s;
  int bits = sm_tensor_dtype(x) == SM_UINT8 ? 8 : 16;
  int64_t nimg = sm_tensor_num_elements(y);
  size_t isz = (size_t)(h * w * c) * (size_t)(bits / 8);
  const unsigned char *px = sm_tensor_data(x);
  for (int64_t i = 0; i < nimg && !s && h > 0 && w > 0; i++) {
    char *buf;
    size_t len;
    s = sm__png_encode(ctx, px + (size_t)i * isz, h, w, c, bits, st->level, i, &buf, &len);
    if (!s) s = sm_tensor_set_string(y, i, buf, len);
    sm__kctx_scratch_free(ctx, buf);
  }
  return s;
}

sm_status *sm__png_encode(sm_kctx *ctx, const unsigned char *px, int64_t h, int64_t w, int64_t c, int bits, int level,
                          int64_t index, char **buf, size_t *len) {
  *buf = NULL;
  *len = 0;
  sm_status *s = need_png();
  if (s) return s;
#ifdef SM_HAVE_PNG
  penc *e = sm__calloc(sizeof *e);
  if (!e) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  e->ctx = ctx;
  int ok = png_encode_one(e, px, h, w, c, bits, level);
  if (e->png) P.destroy_write(&e->png, e->info ? &e->info : NULL);
  if (e->oom) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  else if (!ok) s = sm_status_new(SM_INTERNAL, "PNG encoding failed at the following flattened batch indices: %" PRId64, index);
  if (s) {
    sm__kctx_scratch_free(ctx, e->buf);
  } else {
    *buf = e->buf;
    *len = e->len;
  }
  sm__free(e);
#else
  (void)ctx, (void)px, (void)h, (void)w, (void)c, (void)bits, (void)level, (void)index;
#endif
  return s;
}

/* ---- EncodeJpeg ------------------------------------------------------------------------------ */

static sm_status *encode_jpeg_prepare(const sm_node *node, void **state) {
  encode_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->quality = 95, st->chroma = 1, st->density_unit = 1, st->xd = 300, st->yd = 300;
  int64_t v;
  const char *str;
  size_t len;
  sm_status *s = NULL;
  if (sm__node_attr(node, "format") && !(s = sm__node_attr_string(node, "format", &str, &len))) {
    if (len == 0) st->channels = 0;
    else if (len == 9 && !memcmp(str, "grayscale", 9)) st->channels = 1;
    else if (len == 3 && !memcmp(str, "rgb", 3)) st->channels = 3;
    else s = sm_status_new(SM_INVALID_ARGUMENT, "format must be '', grayscale or rgb, got %.*s", (int)(len > 40 ? 40 : len), str);
  }
  if (!s && sm__node_attr(node, "quality") && !(s = sm__node_attr_int(node, "quality", &v))) {
    if (v < 0 || v > 100) s = sm_status_new(SM_INVALID_ARGUMENT, "quality must be in [0,100], got %" PRId64, v);
    st->quality = (int)v;
  }
  if (!s && sm__node_attr(node, "progressive")) s = sm__node_attr_bool(node, "progressive", &st->progressive);
  if (!s && sm__node_attr(node, "optimize_size")) s = sm__node_attr_bool(node, "optimize_size", &st->optimize);
  if (!s && sm__node_attr(node, "chroma_downsampling")) s = sm__node_attr_bool(node, "chroma_downsampling", &st->chroma);
  if (!s && sm__node_attr(node, "density_unit") && !(s = sm__node_attr_string(node, "density_unit", &str, &len))) {
    if (len == 2 && !memcmp(str, "in", 2)) st->density_unit = 1;
    else if (len == 2 && !memcmp(str, "cm", 2)) st->density_unit = 2;
    else s = sm_status_new(SM_INVALID_ARGUMENT, "density_unit must be 'in' or 'cm', got %.*s", (int)(len > 40 ? 40 : len), str);
  }
  if (!s && sm__node_attr(node, "x_density") && !(s = sm__node_attr_int(node, "x_density", &v))) st->xd = (int)v;
  if (!s && sm__node_attr(node, "y_density") && !(s = sm__node_attr_int(node, "y_density", &v))) st->yd = (int)v;
  if (!s && (st->xd < 0 || st->xd > 65535 || st->yd < 0 || st->yd > 65535))
    s = sm_status_new(SM_INVALID_ARGUMENT, "x_density and y_density must be in [0, 65535]");
  if (!s && sm__node_attr(node, "xmp_metadata") && !(s = sm__node_attr_string(node, "xmp_metadata", &str, &len)) && len) {
    if (len > 65000) s = sm_status_new(SM_INVALID_ARGUMENT, "xmp_metadata is too long (%zu bytes)", len);
    else if (!(st->xmp = sm__alloc(len))) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
    else memcpy(st->xmp, str, len), st->xmp_len = len;
  }
  if (s) {
    encode_release(st);
    return s;
  }
  *state = st;
  return NULL;
}

#ifdef SM_HAVE_JPEG
typedef struct jenc {
  struct jpeg_compress_struct ci;
  jerr_t err;
  unsigned char *buf;
  unsigned long len;
  unsigned char *pkt;
} jenc;

static int jpeg_encode_one(jenc *e, const encode_state *st, const unsigned char *px, int64_t h, int64_t w, int c) {
  e->ci.err = J.std_error(&e->err.pub);
  e->err.pub.error_exit = jerr_exit;
  e->err.pub.emit_message = jerr_quiet;
  if (setjmp(e->err.jb)) return 0;
  J.create_c(&e->ci, JPEG_LIB_VERSION, sizeof e->ci);
  J.mem_dest(&e->ci, &e->buf, &e->len);
  e->ci.image_width = (JDIMENSION)w, e->ci.image_height = (JDIMENSION)h;
  e->ci.input_components = c;
  e->ci.in_color_space = c == 1 ? JCS_GRAYSCALE : JCS_RGB;
  J.set_defaults(&e->ci);
  if (st->optimize) e->ci.optimize_coding = TRUE;
  e->ci.density_unit = (UINT8)st->density_unit;
  e->ci.X_density = (UINT16)st->xd, e->ci.Y_density = (UINT16)st->yd;
  J.set_quality(&e->ci, st->quality, TRUE);
  if (st->progressive) J.simple_progression(&e->ci);
  if (!st->chroma)
    for (int i = 0; i < e->ci.num_components; i++) e->ci.comp_info[i].h_samp_factor = 1, e->ci.comp_info[i].v_samp_factor = 1;
  J.start_c(&e->ci, TRUE);
  if (st->xmp_len) {
    static const char ns[] = "http://ns.adobe.com/xap/1.0/";
    e->pkt = sm__alloc(sizeof ns + st->xmp_len);
    if (!e->pkt) return 0;
    memcpy(e->pkt, ns, sizeof ns); /* the namespace and its NUL */
    memcpy(e->pkt + sizeof ns, st->xmp, st->xmp_len);
    J.write_marker(&e->ci, JPEG_APP0 + 1, e->pkt, (unsigned)(sizeof ns + st->xmp_len));
  }
  while (e->ci.next_scanline < e->ci.image_height) {
    JSAMPROW row = (JSAMPROW)(px + (size_t)e->ci.next_scanline * (size_t)(w * c));
    J.write_lines(&e->ci, &row, 1);
  }
  J.finish_c(&e->ci);
  return 1;
}
#endif

static sm_status *encode_jpeg_vq_prepare(const sm_node *node, void **state) {
  sm_status *s = encode_jpeg_prepare(node, state);
  if (!s) ((encode_state *)*state)->variable_quality = 1;
  return s;
}

static sm_status *encode_jpeg_compute(const void *state, sm_kctx *ctx) {
  encode_state vq;
  const encode_state *st = state;
  const sm_tensor *x = sm__kctx_input(ctx, 0);
  int r = sm_tensor_rank(x);
  const int64_t *d = sm_tensor_dims(x);
  char b[128];
  if (sm_tensor_dtype(x) != SM_UINT8)
    return sm_status_new(SM_INVALID_ARGUMENT, "EncodeJpeg takes uint8 images, not %s", sm_dtype_name(sm_tensor_dtype(x)));
  if (r != 3) return sm_status_new(SM_INVALID_ARGUMENT, "image must be 3-dimensional%s", sm_shape_str(r, d, b, sizeof b));
  if (d[0] >= 65536 || d[1] >= 65536 || d[0] * d[1] * d[2] > INT32_MAX)
    return sm_status_new(SM_INVALID_ARGUMENT, "image too large to encode: %s", sm_shape_str(r, d, b, sizeof b));
  if (st->variable_quality) {
    const sm_tensor *q = sm__kctx_input(ctx, 1);
    if (sm_tensor_rank(q) != 0 || sm_tensor_dtype(q) != SM_INT32)
      return sm_status_new(SM_INVALID_ARGUMENT, "quality must be scalar: %s",
                           sm_shape_str(sm_tensor_rank(q), sm_tensor_dims(q), b, sizeof b));
    int32_t qv = *(const int32_t *)sm_tensor_data(q);
    if (qv < 0 || qv > 100) return sm_status_new(SM_INVALID_ARGUMENT, "quality must be in [0,100], got %d", (int)qv);
    vq = *st;
    vq.quality = qv;
    st = &vq;
  }
  int c = (int)d[2];
  if (st->channels == 0 && c != 1 && c != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "image must have 1 or 3 channels, got %s", sm_shape_str(r, d, b, sizeof b));
  if (st->channels && c != st->channels)
    return sm_status_new(SM_INVALID_ARGUMENT, "format %s expects %d channels, got %s", st->channels == 1 ? "grayscale" : "rgb",
                         st->channels, sm_shape_str(r, d, b, sizeof b));
  sm_status *s = need_jpeg();
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 0, NULL, &y);
  if (s) return s;
#ifdef SM_HAVE_JPEG
  jenc *e = sm__calloc(sizeof *e);
  if (!e) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  int ok = d[0] > 0 && d[1] > 0 && jpeg_encode_one(e, st, sm_tensor_data(x), d[0], d[1], c);
  J.destroy((j_common_ptr)&e->ci);
  if (!ok) s = sm_status_new(SM_INTERNAL, "JPEG encoding failed");
  else s = sm_tensor_set_string(y, 0, e->buf, e->len);
  free(e->buf); /* jpeg_mem_dest's buffer is libjpeg's malloc */
  sm__free(e->pkt);
  sm__free(e);
#else
  (void)st;
#endif
  return s;
}

/* ---- ExtractJpegShape ------------------------------------------------------------------------- */
#ifdef SM_HAVE_JPEG
typedef struct jshape {
  struct jpeg_decompress_struct ci;
  jerr_t err;
} jshape;
#endif

static sm_status *jpeg_shape_prepare(const sm_node *node, void **state) {
  int *t = sm__calloc(sizeof *t);
  if (!t) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  *t = SM_INT32;
  sm_status *s = sm__node_attr(node, "output_type") ? sm__node_attr_type(node, "output_type", t) : NULL;
  if (!s && *t != SM_INT32 && *t != SM_INT64)
    s = sm_status_new(SM_INVALID_ARGUMENT, "output_type must be int32 or int64, got %s", sm_dtype_name(*t));
  if (s) {
    sm__free(t);
    return s;
  }
  *state = t;
  return NULL;
}

static sm_status *jpeg_shape_compute(const void *state, sm_kctx *ctx) {
  const sm_tensor *c = sm__kctx_input(ctx, 0);
  char b[128];
  if (sm_tensor_rank(c) != 0 || sm_tensor_dtype(c) != SM_STRING)
    return sm_status_new(SM_INVALID_ARGUMENT, "contents must be scalar, got shape %s",
                         sm_shape_str(sm_tensor_rank(c), sm_tensor_dims(c), b, sizeof b));
  size_t n;
  const unsigned char *data = (const unsigned char *)sm_tensor_string(c, 0, &n);
  sm_status *s = need_jpeg();
  if (s) return s;
  int64_t dims[3] = {0};
#ifdef SM_HAVE_JPEG
  jshape *j = sm__calloc(sizeof *j);
  if (!j) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  j->ci.err = J.std_error(&j->err.pub);
  j->err.pub.error_exit = jerr_exit;
  j->err.pub.emit_message = jerr_quiet;
  volatile int created = 0;
  if (setjmp(j->err.jb)) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid JPEG data, size %zu", n);
  } else {
    J.create_d(&j->ci, JPEG_LIB_VERSION, sizeof j->ci);
    created = 1;
    J.mem_src(&j->ci, data, (unsigned long)n);
    J.read_header(&j->ci, TRUE);
    dims[0] = j->ci.image_height, dims[1] = j->ci.image_width, dims[2] = j->ci.num_components;
  }
  if (created) J.destroy((j_common_ptr)&j->ci);
  sm__free(j);
  if (s) return s;
#else
  (void)data;
#endif
  sm_tensor *y;
  int t = *(const int *)state;
  if ((s = sm__kctx_alloc_output(ctx, 0, t, 1, (int64_t[]){3}, &y))) return s;
  for (int i = 0; i < 3; i++) {
    if (t == SM_INT32) ((int32_t *)sm_tensor_data(y))[i] = (int32_t)dims[i];
    else ((int64_t *)sm_tensor_data(y))[i] = dims[i];
  }
  return NULL;
}

const sm_kernel sm_kernels_image_codec[] = {
    {"DecodeImage", decode_image_prepare, decode_compute, sm__free, 0},
    {"DecodeJpeg", decode_jpeg_prepare, decode_compute, sm__free, 0},
    {"DecodePng", decode_png_prepare, decode_compute, sm__free, 0},
    {"DecodeGif", decode_gif_prepare, decode_compute, sm__free, 0},
    {"DecodeBmp", decode_bmp_prepare, decode_compute, sm__free, 0},
    {"DecodeWebP", decode_webp_prepare, decode_compute, sm__free, 0},
    {"DecodeAndCropJpeg", decode_crop_prepare, decode_compute, sm__free, 0},
    {"EncodePng", encode_png_prepare, encode_png_compute, encode_release, 0},
    {"EncodeJpeg", encode_jpeg_prepare, encode_jpeg_compute, encode_release, 0},
    {"EncodeJpegVariableQuality", encode_jpeg_vq_prepare, encode_jpeg_compute, encode_release, 0},
    {"ExtractJpegShape", jpeg_shape_prepare, jpeg_shape_compute, sm__free, 0},
    {0},
};

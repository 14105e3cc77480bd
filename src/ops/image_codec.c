/* image_codec.c - the image codecs of tf.io / tf.image: DecodeJpeg, DecodePng, DecodeImage (the
 * format sniffed from the bytes, as TF's DecodeImageV2 kernel does for all three: DecodePng
 * decodes a JPEG too), EncodePng, EncodeJpeg, with TensorFlow's libjpeg-turbo / libpng settings
 * (tensorflow/core/lib/jpeg/jpeg_mem.cc, lib/png/png_io.cc): JPEG decoded with the fast integer
 * IDCT and fancy upsampling unless the attrs say otherwise, PNG's gray/alpha/palette/16-bit
 * conversions chosen as TF chooses them, uint16 and float32 outputs scaled as TF scales them.
 *
 * Binding: like OpenBLAS (src/base/lazylib.c) neither library is linked: libjpeg.so.62 and
 * libpng16.so.16 are dlopened at the first codec op (their headers are needed at build time only,
 * SM_HAVE_JPEG / SM_HAVE_PNG). Without one the ops refuse with UNIMPLEMENTED naming the library.
 * GIF, BMP, WebP and CMYK JPEGs are refused with a clear error (not supported yet). Every library
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
#include "runtime/kernel.h"

#ifdef SM_HAVE_JPEG
#include <jpeglib.h>
#endif
#ifdef SM_HAVE_PNG
#include <png.h>
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
  J.ok = J.std_error && J.create_d && J.create_c && J.destroy && J.mem_src && J.mem_dest && J.read_header &&
         J.calc_dims && J.start_d && J.read_lines && J.finish_d && J.set_defaults && J.set_quality &&
         J.simple_progression && J.start_c && J.write_marker && J.write_lines && J.finish_c;
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

/* ---- decoding ------------------------------------------------------------------------------ */

enum { OP_DECODE_IMAGE, OP_DECODE_JPEG, OP_DECODE_PNG };

typedef struct decode_state {
  int op, channels, dtype, ratio, fancy, dct; /* dct: 0 fast (TF's default), 1 accurate */
  int expand_animations;
} decode_state;

static sm_status *decode_prepare_op(const sm_node *node, void **state, int op) {
  decode_state *st = sm__calloc(sizeof *st);
  if (!st) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
  st->op = op, st->dtype = SM_UINT8, st->ratio = 1, st->fancy = 1;
  int64_t v;
  sm_status *s = NULL;
  if (sm__node_attr(node, "channels") && !(s = sm__node_attr_int(node, "channels", &v))) st->channels = (int)v;
  if (!s && sm__node_attr(node, "dtype")) s = sm__node_attr_type(node, "dtype", &st->dtype);
  if (!s && op == OP_DECODE_JPEG) {
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
  if (!s && sm__node_attr(node, "expand_animations")) s = sm__node_attr_bool(node, "expand_animations", &st->expand_animations);
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

/* The decoded pixels before the dtype conversion: 8 or 16 bits per sample. */
typedef struct raw_image {
  int64_t h, w, c;
  int bits;
  unsigned char *px; /* sm__kctx_scratch */
} raw_image;

#if defined(SM_HAVE_JPEG) || defined(SM_HAVE_PNG)
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
  unsigned char *px;
} jdec;

static sm_status *jpeg_decode(const decode_state *st, const unsigned char *data, size_t n, sm_kctx *ctx, raw_image *out) {
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
  if (d->ci.jpeg_color_space == JCS_CMYK || d->ci.jpeg_color_space == JCS_YCCK) {
    if (st->channels != 1) {
      s = sm_status_new(SM_UNIMPLEMENTED, "CMYK / YCCK JPEGs are not supported yet (only as channels=1)");
      goto done;
    }
  }
  int comps = st->channels ? st->channels : d->ci.num_components;
  if (comps == 4 && (d->ci.jpeg_color_space == JCS_CMYK || d->ci.jpeg_color_space == JCS_YCCK)) comps = 3;
  if (comps != 1 && comps != 3) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "Invalid components value %d", comps);
    goto done;
  }
  d->ci.out_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
  d->ci.scale_num = 1;
  d->ci.scale_denom = (unsigned)st->ratio;
  d->ci.dct_method = st->dct ? JDCT_ISLOW : JDCT_IFAST;
  d->ci.do_fancy_upsampling = st->fancy ? TRUE : FALSE;
  J.calc_dims(&d->ci);
  int64_t h = d->ci.output_height, w = d->ci.output_width;
  if ((s = check_size(h, w, comps))) goto done;
  d->px = sm__kctx_scratch(ctx, (size_t)(h * w * comps), &s);
  if (!d->px) goto done;
  J.start_d(&d->ci);
  if ((int)d->ci.output_components != comps) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "jpeg::Uncompress failed. Invalid JPEG data or crop window.");
    goto done;
  }
  while (d->ci.output_scanline < d->ci.output_height) {
    JSAMPROW row = d->px + (size_t)d->ci.output_scanline * (size_t)(w * comps);
    if (J.read_lines(&d->ci, &row, 1) != 1 || d->err.pub.num_warnings) break;
  }
  if (d->ci.output_scanline < d->ci.output_height || d->err.pub.num_warnings) {
    s = sm_status_new(SM_INVALID_ARGUMENT, "jpeg::Uncompress failed. Invalid JPEG data or crop window.");
    goto done;
  }
  J.finish_d(&d->ci);
  out->h = h, out->w = w, out->c = comps, out->bits = 8, out->px = d->px;
  d->px = NULL;
done:
  if (created) J.destroy((j_common_ptr)&d->ci);
  if (d->px) sm__kctx_scratch_free(ctx, d->px);
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
  int is_jpeg = n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff;
  int is_png = n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8);
  if (is_jpeg) {
    if ((s = need_jpeg())) return s;
#ifdef SM_HAVE_JPEG
    decode_state js = *st;
    if (st->dtype != SM_UINT8) js.dtype = SM_UINT8;
    s = jpeg_decode(&js, p, n, ctx, &im);
#endif
  } else if (is_png) {
    if ((s = need_png())) return s;
#ifdef SM_HAVE_PNG
    s = png_decode(st, p, n, ctx, &im);
#endif
  } else if ((n >= 3 && !memcmp(p, "GIF", 3)) || (n >= 2 && !memcmp(p, "BM", 2)) ||
             (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4))) {
    return sm_status_new(SM_UNIMPLEMENTED, "decoding %s images is not supported yet (JPEG and PNG are)",
                         p[0] == 'G' ? "GIF" : p[0] == 'B' ? "BMP" : "WebP");
  } else {
    return sm_status_new(SM_INVALID_ARGUMENT, "Unknown image file format. One of JPEG, JPEG XL, PNG, GIF, BMP, WebP required.");
  }
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output_uninit(ctx, 0, st->dtype, 3, (int64_t[]){im.h, im.w, im.c}, &y);
  if (!s) {
    int64_t m = im.h * im.w * im.c;
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
  sm_status *s = need_png();
  if (s) return s;
  sm_tensor *y;
  s = sm__kctx_alloc_output(ctx, 0, SM_STRING, r - 3, d, &y);
  if (s) return s;
#ifdef SM_HAVE_PNG
  int bits = sm_tensor_dtype(x) == SM_UINT8 ? 8 : 16;
  int64_t nimg = sm_tensor_num_elements(y);
  size_t isz = (size_t)(h * w * c) * (size_t)(bits / 8);
  const unsigned char *px = sm_tensor_data(x);
  for (int64_t i = 0; i < nimg && !s; i++) {
    penc *e = sm__calloc(sizeof *e);
    if (!e) return sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
    e->ctx = ctx;
    int ok = h > 0 && w > 0 && png_encode_one(e, px + (size_t)i * isz, h, w, c, bits, st->level);
    if (e->png) P.destroy_write(&e->png, e->info ? &e->info : NULL);
    if (e->oom) s = sm_status_new(SM_RESOURCE_EXHAUSTED, "out of memory");
    else if (!ok) s = sm_status_new(SM_INTERNAL, "PNG encoding failed at the following flattened batch indices: %" PRId64, i);
    else s = sm_tensor_set_string(y, i, e->buf, e->len);
    sm__kctx_scratch_free(ctx, e->buf);
    sm__free(e);
  }
#else
  (void)st;
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

static sm_status *encode_jpeg_compute(const void *state, sm_kctx *ctx) {
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

const sm_kernel sm_kernels_image_codec[] = {
    {"DecodeImage", decode_image_prepare, decode_compute, sm__free, 0},
    {"DecodeJpeg", decode_jpeg_prepare, decode_compute, sm__free, 0},
    {"DecodePng", decode_png_prepare, decode_compute, sm__free, 0},
    {"EncodePng", encode_png_prepare, encode_png_compute, encode_release, 0},
    {"EncodeJpeg", encode_jpeg_prepare, encode_jpeg_compute, encode_release, 0},
    {0},
};

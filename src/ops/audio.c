/* audio.c - the audio kernel family (tf.audio and the speech ops of tf.raw_ops): DecodeWav,
 * EncodeWav, AudioSpectrogram and Mfcc, as TensorFlow computes them (core/lib/wav/wav_io.cc,
 * kernels/decode_wav_op.cc, encode_wav_op.cc, spectrogram.cc, spectrogram_op.cc, mfcc.cc,
 * mfcc_mel_filterbank.cc, mfcc_dct.cc).
 *
 * DecodeWav reads 16-bit PCM RIFF/WAVE only, with TF's chunk walk (JUNK/bext/... chunks before
 * "fmt ", an 18-byte fmt chunk, chunks after it skipped, exactly one "data" chunk) and TF's error
 * texts; every size is checked against the bytes before anything is allocated, so a hostile file
 * gives an error, never a crash or an allocation larger than the file. EncodeWav writes TF's
 * 44-byte header and rounds samples as TF (roundf(x * 32768) clamped to int16).
 *
 * AudioSpectrogram: a periodic Hann window (double), windows of window_size samples every stride
 * samples, zero-padded to the next power of two, a real FFT in double (TF uses Ooura's rdft; this
 * is a radix-2 FFT: the same sums up to the last bits of double, far below float), |X|^2 rounded
 * to float, sqrtf of that unless magnitude_squared. Mfcc: TF's HTK-style mel filterbank over the
 * square roots of the spectrogram bins, log with a 1e-12 floor, and its DCT-II table, all in double
 * as TF, rounded to float at the end. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/checked.h"
#include "codec_int.h"
#include "runtime/kernel.h"

static const double PI = 3.14159265358979323846; /* TF: std::atan(1) * 4, the same double */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static const char *dims_str(const sm_tensor *t, char *buf, size_t cap) {
  return sm_shape_str(sm_tensor_rank(t), sm_tensor_dims(t), buf, cap);
}

/* ---- DecodeWav ------------------------------------------------------------------------------ */

typedef struct {
  int64_t desired_channels, desired_samples;
} wav_state;

static sm_status *decode_wav_prepare(const sm_node *node, void **state) {
  wav_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->desired_channels = st->desired_samples = -1;
  sm_status *s = NULL;
  if (sm__node_attr(node, "desired_channels")) s = sm__node_attr_int(node, "desired_channels", &st->desired_channels);
  if (!s && sm__node_attr(node, "desired_samples")) s = sm__node_attr_int(node, "desired_samples", &st->desired_samples);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* TF's IncrementOffset: offsets are ints, the data at most INT_MAX bytes. */
static sm_status *wav_advance(int64_t off, int64_t inc, size_t size, int64_t *out) {
  if (off > (int64_t)size) return sm_status_new(SM_INVALID_ARGUMENT, "Initial offset is outside data range: %lld", (long long)off);
  int64_t n = off + inc;
  if (n > (int64_t)size) return sm_status_new(SM_INVALID_ARGUMENT, "Data too short when trying to read string");
  *out = n;
  return NULL;
}

/* Reads n (<= 4) bytes at *off into buf and advances. */
static sm_status *wav_read(const uint8_t *d, size_t size, int64_t *off, size_t n, uint8_t *buf) {
  int64_t next;
  sm_status *s = wav_advance(*off, (int64_t)n, size, &next);
  if (s) return s;
  memcpy(buf, d + *off, n);
  *off = next;
  return NULL;
}

static int is_skippable(const uint8_t *id) {
  static const char *const ok[] = {"JUNK", "bext", "iXML", "qlty", "mext", "levl", "link", "axml"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    if (!memcmp(id, ok[i], 4)) return 1;
  return 0;
}

/* The chunk id as TF prints a std::string of 4 bytes (NULs and all; printed up to the first NUL
 * here, as a C message can hold no NUL). */
#define ID4(b) (int)strnlen((const char *)(b), 4), (const char *)(b)

typedef struct {
  uint16_t channels;
  uint32_t rate, frames;
  int64_t data_at; /* offset of the samples */
} wav_info;

static sm_status *wav_parse(const uint8_t *d, size_t size, wav_info *w) {
  int64_t off = 0;
  uint8_t b[4];
  sm_status *s = wav_read(d, size, &off, 4, b);
  if (s) return s;
  if (memcmp(b, "RIFF", 4)) return sm_status_new(SM_INVALID_ARGUMENT, "Header mismatch: Expected RIFF but found %.*s", ID4(b));
  if ((s = wav_read(d, size, &off, 4, b))) return s; /* total size, unused */
  if ((s = wav_read(d, size, &off, 4, b))) return s;
  if (memcmp(b, "WAVE", 4)) return sm_status_new(SM_INVALID_ARGUMENT, "Header mismatch: Expected WAVE but found %.*s", ID4(b));
  if ((s = wav_read(d, size, &off, 4, b))) return s;
  while (memcmp(b, "fmt ", 4)) {
    if (!is_skippable(b)) return sm_status_new(SM_INVALID_ARGUMENT, "Unexpected field %.*s", ID4(b));
    uint8_t z[4];
    if ((s = wav_read(d, size, &off, 4, z))) return s;
    if ((s = wav_advance(off, rd32(z), size, &off))) return s;
    if ((s = wav_read(d, size, &off, 4, b))) return s;
  }
  if ((s = wav_read(d, size, &off, 4, b))) return s;
  uint32_t fmt_size = rd32(b);
  if (fmt_size != 16 && fmt_size != 18)
    return sm_status_new(SM_INVALID_ARGUMENT, "Bad format chunk size for WAV: Expected 16 or 18, but got%u", fmt_size);
  if ((s = wav_read(d, size, &off, 2, b))) return s;
  if (rd16(b) != 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Bad audio format for WAV: Expected 1 (PCM), but got%u", rd16(b));
  if ((s = wav_read(d, size, &off, 2, b))) return s;
  w->channels = rd16(b);
  if (w->channels < 1)
    return sm_status_new(SM_INVALID_ARGUMENT, "Bad number of channels for WAV: Expected at least 1, but got %u", w->channels);
  if ((s = wav_read(d, size, &off, 4, b))) return s;
  w->rate = rd32(b);
  if ((s = wav_read(d, size, &off, 4, b))) return s;
  uint32_t bytes_per_second = rd32(b);
  if ((s = wav_read(d, size, &off, 2, b))) return s;
  uint16_t bytes_per_sample = rd16(b);
  if ((s = wav_read(d, size, &off, 2, b))) return s;
  uint16_t bits = rd16(b);
  if (bits != 16) return sm_status_new(SM_INVALID_ARGUMENT, "Can only read 16-bit WAV files, but received %u", bits);
  uint32_t want_bps = ((uint32_t)bits * w->channels + 7) / 8;
  if (bytes_per_sample != want_bps)
    return sm_status_new(SM_INVALID_ARGUMENT, "Bad bytes per sample in WAV header: Expected %u but got %u", want_bps,
                         bytes_per_sample);
  uint32_t want_bpsec = (uint32_t)bytes_per_sample * w->rate; /* uint32 arithmetic, as TF */
  if (bytes_per_second != want_bpsec)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Bad bytes per second in WAV header: Expected %u but got %u (sample_rate=%u, bytes_per_sample=%u)",
                         want_bpsec, bytes_per_second, w->rate, bytes_per_sample);
  if (fmt_size == 18) off += 2;
  int found = 0;
  while (off < (int64_t)size) {
    uint8_t id[4];
    if ((s = wav_read(d, size, &off, 4, id))) return s;
    if ((s = wav_read(d, size, &off, 4, b))) return s;
    uint32_t chunk = rd32(b);
    if (chunk > 0x7fffffffu)
      return sm_status_new(SM_INVALID_ARGUMENT, "WAV data chunk '%.*s' is too large: %u bytes, but the limit is 2147483647",
                           ID4(id), chunk);
    if (!memcmp(id, "data", 4)) {
      if (found) return sm_status_new(SM_INVALID_ARGUMENT, "More than one data chunk found in WAV");
      found = 1;
      w->frames = chunk / bytes_per_sample;
      int64_t count = (int64_t)w->frames * w->channels, end;
      if ((s = wav_advance(off, 2 * count, size, &end))) return s;
      w->data_at = off;
      off = end; /* TF reads just the samples: a chunk's odd tail is read as the next chunk */
    } else {
      off += chunk; /* past the end (or past INT_MAX in TF's int): the walk ends */
    }
  }
  if (!found) return sm_status_new(SM_INVALID_ARGUMENT, "No data chunk found in WAV");
  return NULL;
}

static sm_status *decode_wav_compute(const void *state, sm_kctx *ctx) {
  const wav_state *st = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  char sb[64];
  if (sm_tensor_rank(in) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "contents must be scalar, got shape %s", dims_str(in, sb, sizeof sb));
  size_t size;
  const uint8_t *d = (const uint8_t *)sm_tensor_string(in, 0, &size);
  if (size > 0x7fffffff) return sm_status_new(SM_INVALID_ARGUMENT, "WAV contents are too large for int: %zu", size);
  wav_info w = {0};
  sm_status *s = wav_parse(d, size, &w);
  if (s) return s;
  if (st->desired_channels < -1)
    return sm_status_new(SM_INVALID_ARGUMENT, "desired_channels must be >= -1, got %lld", (long long)st->desired_channels);
  if (st->desired_samples < -1)
    return sm_status_new(SM_INVALID_ARGUMENT, "desired_samples must be >= -1, got %lld", (long long)st->desired_samples);
  int32_t nsamp = st->desired_samples == -1 ? (int32_t)w.frames : (int32_t)st->desired_samples;
  int32_t nch = st->desired_channels == -1 ? (int32_t)w.channels : (int32_t)st->desired_channels;
  if (nsamp < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Output sample count must be >= 0, got %d", nsamp);
  if (nch < 0) return sm_status_new(SM_INVALID_ARGUMENT, "Output channel count must be >= 0, got %d", nch);
  sm_tensor *out, *rate;
  int64_t dims[2] = {nsamp, nch};
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 2, dims, &out))) return s;
  float *o = sm_tensor_data(out);
  const uint8_t *p = d + w.data_at;
  for (int64_t i = 0; i < nsamp && i < (int64_t)w.frames; i++)
    for (int32_t c = 0; c < nch; c++) {
      int src = c < w.channels ? c : w.channels - 1;
      int16_t v = (int16_t)rd16(p + 2 * (i * w.channels + src));
      o[i * nch + c] = (float)v * (1.0f / 32768.0f);
    }
  if ((s = sm__kctx_alloc_output(ctx, 1, SM_INT32, 0, NULL, &rate))) return s;
  *(int32_t *)sm_tensor_data(rate) = (int32_t)w.rate;
  return NULL;
}

/* ---- EncodeWav ------------------------------------------------------------------------------ */

static sm_status *encode_wav_compute(const void *state, sm_kctx *ctx) {
  (void)state;
  const sm_tensor *audio = sm__kctx_input(ctx, 0), *rate = sm__kctx_input(ctx, 1);
  char sb[64];
  if (sm_tensor_rank(audio) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "audio must be 2-dimensional%s", dims_str(audio, sb, sizeof sb));
  if (sm_tensor_rank(rate) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input sample_rate should be a scalar tensor, got %s instead.",
                         dims_str(rate, sb, sizeof sb));
  int32_t sr = *(const int32_t *)sm_tensor_data(rate);
  if (sm_tensor_num_elements(audio) >= 0x7fffffff)
    return sm_status_new(SM_INVALID_ARGUMENT, "Cannot encode audio with >= max int32 elements");
  uint64_t channels = (uint64_t)(int64_t)(int32_t)sm_tensor_dims(audio)[1];
  uint64_t frames = (uint64_t)(int64_t)(int32_t)sm_tensor_dims(audio)[0];
  uint64_t srate = (uint64_t)(int64_t)sr; /* TF's size_t: a negative rate is huge */
  sm_status *s = sm__wav_check(frames, channels, srate);
  if (s) return s;
  sm_tensor *out;
  if ((s = sm__kctx_alloc_output(ctx, 0, SM_STRING, 0, NULL, &out))) return s;
  uint64_t file_size = sm__wav_size(frames, channels);
  uint8_t *buf = sm__kctx_scratch(ctx, (size_t)file_size, &s);
  if (!buf) return s;
  sm__wav_write(buf, sm_tensor_data(audio), frames, channels, (uint32_t)srate);
  s = sm_tensor_set_string(out, 0, buf, (size_t)file_size);
  sm__kctx_scratch_free(ctx, buf);
  return s;
}

sm_status *sm__wav_check(uint64_t frames, uint64_t channels, uint64_t srate) {
  if (srate == 0 || srate > 0xffffffffu)
    return sm_status_new(SM_INVALID_ARGUMENT, "sample_rate must be in (0, 2^32), got: %llu", (unsigned long long)srate);
  if (channels == 0 || channels > 0xffff)
    return sm_status_new(SM_INVALID_ARGUMENT, "num_channels must be in (0, 2^16), got: %llu", (unsigned long long)channels);
  if (frames > 0xffffffffu || sm__wav_size(frames, channels) > 0xffffffffu)
    return sm_status_new(SM_INVALID_ARGUMENT, "Provided channels and frames cannot be encoded as a WAV.");
  return NULL;
}

void sm__wav_write(uint8_t *buf, const float *a, uint64_t frames, uint64_t channels, uint32_t srate) {
  uint64_t nsamples = frames * channels, file_size = sm__wav_size(frames, channels);
  uint32_t bps = (uint32_t)(srate * 2 * channels);
  memcpy(buf, "RIFF", 4);
  for (int i = 0; i < 4; i++) buf[4 + i] = (uint8_t)((file_size - 8) >> (8 * i));
  memcpy(buf + 8, "WAVEfmt ", 8);
  const uint32_t f[] = {16, 1 | (uint32_t)channels << 16, srate, bps, (uint32_t)(2 * channels) | 16u << 16};
  for (int k = 0; k < 5; k++)
    for (int i = 0; i < 4; i++) buf[16 + 4 * k + i] = (uint8_t)(f[k] >> (8 * i));
  memcpy(buf + 36, "data", 4);
  for (int i = 0; i < 4; i++) buf[40 + i] = (uint8_t)((nsamples * 2) >> (8 * i));
  for (uint64_t i = 0; i < nsamples; i++) {
    float x = roundf(a[i] * 32768.0f);
    /* std::min(std::max(x, -32768), 32767): a NaN passes through both; x86 converts it to 0 */
    int16_t v = isnan(x) ? 0 : x < -32768.0f ? -32768 : x > 32767.0f ? 32767 : (int16_t)x;
    buf[44 + 2 * i] = (uint8_t)((uint16_t)v & 0xff);
    buf[45 + 2 * i] = (uint8_t)((uint16_t)v >> 8);
  }
}

/* ---- AudioSpectrogram ----------------------------------------------------------------------- */

typedef struct {
  int64_t window, stride;
  int squared;
} spec_state;

static sm_status *spec_prepare(const sm_node *node, void **state) {
  spec_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  sm_status *s = sm__node_attr_int(node, "window_size", &st->window);
  if (!s) s = sm__node_attr_int(node, "stride", &st->stride);
  if (!s && sm__node_attr(node, "magnitude_squared")) s = sm__node_attr_bool(node, "magnitude_squared", &st->squared);
  st->window = (int32_t)st->window, st->stride = (int32_t)st->stride;
  if (!s && st->window > (1 << 28))
    s = sm_status_new(SM_INVALID_ARGUMENT, "window_size %lld is larger than this runtime's limit of 2^28", (long long)st->window);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

/* In-place radix-2 complex FFT of n (a power of two) points, forward (e^{-2 pi i jk/n}); tw holds
 * cos/sin(2 pi k / n) for k < n/2. */
static void fft_pow2(double *re, double *im, int64_t n, const double *twc, const double *tws) {
  for (int64_t i = 1, j = 0; i < n; i++) {
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double t = re[i];
      re[i] = re[j], re[j] = t;
      t = im[i], im[i] = im[j], im[j] = t;
    }
  }
  for (int64_t len = 2; len <= n; len <<= 1) {
    int64_t half = len >> 1, step = n / len;
    for (int64_t i = 0; i < n; i += len)
      for (int64_t k = 0; k < half; k++) {
        double wr = twc[k * step], wi = -tws[k * step];
        double *ar = re + i + k, *ai = im + i + k, *br = re + i + k + half, *bi = im + i + k + half;
        double xr = *br * wr - *bi * wi, xi = *br * wi + *bi * wr;
        *br = *ar - xr, *bi = *ai - xi;
        *ar += xr, *ai += xi;
      }
  }
}

static sm_status *spec_compute(const void *state, sm_kctx *ctx) {
  const spec_state *st = state;
  const sm_tensor *in = sm__kctx_input(ctx, 0);
  char sb[64];
  if (sm_tensor_rank(in) != 2)
    return sm_status_new(SM_INVALID_ARGUMENT, "input must be 2-dimensional%s", dims_str(in, sb, sizeof sb));
  if (st->window < 2 || st->stride < 1) /* TF 2.21 checks them here, as Spectrogram::Initialize */
    return sm_status_new(SM_INVALID_ARGUMENT, "Spectrogram initialization failed for window size %d and stride %d",
                         (int)st->window, (int)st->stride);
  int64_t win = st->window, stride = st->stride, fft = 1;
  while (fft < win) fft <<= 1;
  int64_t width = 1 + fft / 2, nsamp = sm_tensor_dims(in)[0], nch = sm_tensor_dims(in)[1];
  int64_t height = nsamp < win ? 0 : 1 + (nsamp - win) / stride;
  sm_tensor *out;
  int64_t dims[3] = {nch, height, width};
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 3, dims, &out);
  if (s || height == 0 || nch == 0) return s;
  /* window, twiddles, one frame's re/im */
  size_t nd = (size_t)(win + fft + 2 * fft);
  double *buf = sm__kctx_scratch(ctx, nd * sizeof(double), &s);
  if (!buf) return s;
  double *hann = buf, *twc = hann + win, *tws = twc + fft / 2, *re = tws + fft / 2, *im = re + fft;
  for (int64_t i = 0; i < win; i++) hann[i] = 0.5 - 0.5 * cos((2 * PI * (double)i) / (double)win);
  for (int64_t k = 0; k < fft / 2; k++) {
    twc[k] = cos(2 * PI * (double)k / (double)fft);
    tws[k] = sin(2 * PI * (double)k / (double)fft);
  }
  const float *x = sm_tensor_data(in);
  float *o = sm_tensor_data(out);
  for (int64_t c = 0; c < nch; c++)
    for (int64_t h = 0; h < height; h++) {
      const float *frame = x + h * stride * nch + c;
      for (int64_t j = 0; j < win; j++) re[j] = (double)frame[j * nch] * hann[j];
      for (int64_t j = win; j < fft; j++) re[j] = 0;
      memset(im, 0, (size_t)fft * sizeof *im);
      fft_pow2(re, im, fft, twc, tws);
      float *row = o + (c * height + h) * width;
      for (int64_t k = 0; k < width; k++) {
        float p = (float)(re[k] * re[k] + im[k] * im[k]);
        row[k] = st->squared ? p : sqrtf(p);
      }
    }
  sm__kctx_scratch_free(ctx, buf);
  return NULL;
}

/* ---- Mfcc ----------------------------------------------------------------------------------- */

typedef struct {
  float upper, lower;
  int64_t nfilt, ndct;
} mfcc_state;

static sm_status *mfcc_prepare(const sm_node *node, void **state) {
  mfcc_state *st = calloc(1, sizeof *st);
  if (!st) return sm_status_new(SM_NO_MEMORY, "out of memory");
  st->upper = 4000, st->lower = 20, st->nfilt = 40, st->ndct = 13;
  sm_status *s = NULL;
  if (sm__node_attr(node, "upper_frequency_limit")) s = sm__node_attr_float(node, "upper_frequency_limit", &st->upper);
  if (!s && sm__node_attr(node, "lower_frequency_limit")) s = sm__node_attr_float(node, "lower_frequency_limit", &st->lower);
  if (!s && sm__node_attr(node, "filterbank_channel_count"))
    s = sm__node_attr_int(node, "filterbank_channel_count", &st->nfilt);
  if (!s && sm__node_attr(node, "dct_coefficient_count")) s = sm__node_attr_int(node, "dct_coefficient_count", &st->ndct);
  st->nfilt = (int32_t)st->nfilt, st->ndct = (int32_t)st->ndct;
  /* the DCT table is dct x filterbank doubles: a hostile graph's huge counts are refused (speech
   * models use 40-128 channels) */
  if (!s && (st->nfilt > 4096 || st->ndct > 4096))
    s = sm_status_new(SM_INVALID_ARGUMENT,
                      "Mfcc: filterbank_channel_count %lld / dct_coefficient_count %lld exceed this runtime's limit of 4096",
                      (long long)st->nfilt, (long long)st->ndct);
  if (s) {
    free(st);
    return s;
  }
  *state = st;
  return NULL;
}

static double freq_to_mel(double f) { return 1127.0 * log1p(f / 700.0); }

static sm_status *mfcc_compute(const void *state, sm_kctx *ctx) {
  const mfcc_state *st = state;
  const sm_tensor *spec = sm__kctx_input(ctx, 0), *rate_t = sm__kctx_input(ctx, 1);
  char sb[64];
  if (sm_tensor_rank(spec) != 3)
    return sm_status_new(SM_INVALID_ARGUMENT, "spectrogram must be 3-dimensional%s", dims_str(spec, sb, sizeof sb));
  if (sm_tensor_rank(rate_t) != 0)
    return sm_status_new(SM_INVALID_ARGUMENT, "Input sample_rate should be a scalar tensor, got %s instead.",
                         dims_str(rate_t, sb, sizeof sb));
  int32_t rate = *(const int32_t *)sm_tensor_data(rate_t);
  int64_t nbins = sm_tensor_dims(spec)[2], frames = sm_tensor_dims(spec)[1], nch = sm_tensor_dims(spec)[0];
  int64_t nf = st->nfilt, nd = st->ndct;
  double lower = st->lower, upper = st->upper;
  /* Mfcc::Initialize: the filterbank's and the DCT's checks */
  if (nf < 1 || rate <= 0 || nbins < 2 || nbins > INT32_MAX || lower < 0 || !(upper > lower) || nd < 1 || nd > nf)
    return sm_status_new(SM_INVALID_ARGUMENT,
                         "Mfcc initialization failed for channel count %d, sample rate %d and filterbank_channel_count %d",
                         (int32_t)nbins, rate, (int)nf);
  sm_tensor *out;
  int64_t dims[3] = {nch, frames, nd};
  sm_status *s = sm__kctx_alloc_output(ctx, 0, SM_FLOAT, 3, dims, &out);
  if (s) return s;
  /* scratch: centers [nf+1], weights [nbins], mapper [nbins] (as doubles), cosines [nd][nf], work [nf] */
  size_t n = (size_t)(nf + 1 + 2 * nbins + nd * nf + nf + nd);
  double *buf = sm__kctx_scratch(ctx, n * sizeof(double), &s);
  if (!buf) return s;
  double *center = buf, *weight = center + nf + 1, *mapper = weight + nbins, *cosv = mapper + nbins, *work = cosv + nd * nf,
         *res = work + nf;
  double mel_low = freq_to_mel(lower), mel_hi = freq_to_mel(upper), spacing = (mel_hi - mel_low) / (double)(nf + 1);
  for (int64_t i = 0; i < nf + 1; i++) center[i] = mel_low + spacing * (double)(i + 1);
  double hz_per_bin = 0.5 * rate / (double)(nbins - 1);
  double sidx = 1.5 + lower / hz_per_bin, eidx = upper / hz_per_bin;
  /* TF's int casts; beyond the bins both mean the same as the clamp (end >= bins: no output) */
  int64_t start = sidx > (double)nbins ? nbins + 1 : (int64_t)sidx, end = eidx > (double)nbins ? nbins : (int64_t)eidx;
  int64_t channel = 0;
  for (int64_t i = 0; i < nbins; i++) {
    double melf = freq_to_mel((double)i * hz_per_bin);
    if (i < start || i > end) {
      mapper[i] = -2;
      weight[i] = 0;
      continue;
    }
    while (channel < nf && center[channel] < melf) channel++;
    mapper[i] = (double)(channel - 1);
    int64_t ch = channel - 1;
    if (ch >= 0)
      weight[i] = (center[ch + 1] - melf) / (center[ch + 1] - center[ch]);
    else
      weight[i] = (center[0] - melf) / (center[0] - mel_low);
  }
  double fnorm = sqrt(2.0 / (double)nf), arg = PI / (double)nf;
  for (int64_t i = 0; i < nd; i++)
    for (int64_t j = 0; j < nf; j++) cosv[i * nf + j] = fnorm * cos((double)i * arg * ((double)j + 0.5));
  const float *x = sm_tensor_data(spec);
  float *o = sm_tensor_data(out);
  int short_input = nbins <= end; /* TF's filterbank logs and leaves its output empty: zeros */
  for (int64_t f = 0; f < nch * frames; f++) {
    const float *row = x + f * nbins;
    int64_t len = short_input ? 0 : nf;
    for (int64_t c = 0; c < nf; c++) work[c] = 0;
    if (!short_input) {
      for (int64_t i = start; i <= end; i++) {
        double v = sqrt((double)row[i]), wv = v * weight[i];
        int64_t ch = (int64_t)mapper[i];
        if (ch >= 0) work[ch] += wv;
        ch++;
        if (ch < nf) work[ch] += v - wv;
      }
      for (int64_t c = 0; c < nf; c++) work[c] = log(work[c] < 1e-12 ? 1e-12 : work[c]);
    }
    for (int64_t i = 0; i < nd; i++) {
      double sum = 0;
      for (int64_t j = 0; j < len; j++) sum += cosv[i * nf + j] * work[j];
      res[i] = sum;
    }
    for (int64_t i = 0; i < nd; i++) o[f * nd + i] = (float)res[i];
  }
  sm__kctx_scratch_free(ctx, buf);
  return NULL;
}

/* ---- the table ------------------------------------------------------------------------------ */

const sm_kernel sm_kernels_audio[] = {
    {"DecodeWav", decode_wav_prepare, decode_wav_compute, free, 0},
    {"EncodeWav", NULL, encode_wav_compute, NULL, 0},
    {"AudioSpectrogram", spec_prepare, spec_compute, free, 0},
    {"Mfcc", mfcc_prepare, mfcc_compute, free, 0},
    {0},
};

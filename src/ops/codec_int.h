/* codec_int.h - the encoders image_codec.c and audio.c own, for the kernels that embed their
 * output in something else (summary.c's ImageSummary and AudioSummary write PNG and WAV bytes
 * into Summary protos, byte for byte what EncodePng and EncodeWav give). */
#ifndef SM_OPS_CODEC_INT_H
#define SM_OPS_CODEC_INT_H
#include <stddef.h>
#include <stdint.h>

#include "runtime/kernel.h"

/* One image [h, w, c] (h, w > 0, c in 1..4) of 8- or 16-bit samples (host order) as PNG, with
 * zlib level `level` (-1: its default), as TF's png::WriteImageToBuffer writes it: *buf is this
 * compute's scratch (sm__kctx_scratch_free it), *len its length. `index` names the image in the
 * error ("PNG encoding failed at ... index"). UNIMPLEMENTED when libpng cannot be loaded. */
sm_status *sm__png_encode(sm_kctx *ctx, const unsigned char *px, int64_t h, int64_t w, int64_t c, int bits, int level,
                          int64_t index, char **buf, size_t *len);

/* TF's 16-bit PCM WAV (wav_io.cc EncodeAudioAsS16LEWav) of frames x channels float samples at
 * srate into buf, which holds sm__wav_size(frames, channels) bytes: the 44-byte header, then each
 * sample roundf(x * 32768) clamped to int16. The caller checks the sizes (sm__wav_check). */
void sm__wav_write(uint8_t *buf, const float *a, uint64_t frames, uint64_t channels, uint32_t srate);
static inline uint64_t sm__wav_size(uint64_t frames, uint64_t channels) { return 44 + frames * channels * 2; }
/* TF's checks of a WAV's rate, channel count and size (a rate of 0 or >= 2^32, channels 0 or
 * >= 2^16, a file of 2^32 bytes or more), with its messages. */
sm_status *sm__wav_check(uint64_t frames, uint64_t channels, uint64_t srate);
#endif

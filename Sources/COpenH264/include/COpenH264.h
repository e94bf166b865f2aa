#ifndef MEDIAROUTE_COPENH264_H
#define MEDIAROUTE_COPENH264_H
/*
 * Cisco's OpenH264 encoder (Debian 12's libopenh264-7, 2.3.1, BSD-2-Clause), opened with dlopen
 * when the first video route starts. Nothing links it: an idle daemon, and every audio route,
 * never map it. Why OpenH264 and not libavcodec's libx264: Docs/video.md ("The encoder").
 *
 * One encoder makes H.264 Constrained Baseline (no B-frames: each frame is sent as soon as it
 * is encoded) in Annex B, one slice per frame, SPS and PPS before every IDR so a decoder can
 * start at any of them. Functions return 0 on success, -1 when the encoder refused, -2 when
 * the output did not fit.
 */
#include <stddef.h>
#include <stdint.h>

struct mr_h264;

/* An encoder for `width`×`height` I420 pictures at `frame_rate`, aiming at `bit_rate` bit/s,
   an IDR every `intra_period` frames; `screen` tunes it for screen content (else camera).
   NULL with the reason in `error` (libopenh264 absent, a size it refuses). */
struct mr_h264 *mr_h264_new(int width, int height, float frame_rate, int bit_rate, unsigned intra_period, int screen, char *error,
                            size_t size);
void mr_h264_free(struct mr_h264 *encoder);

/* Encodes one I420 picture (planes with their strides) stamped `timestamp_ms`; the access
   unit's NAL units go to `output` (at most `capacity` bytes) as Annex B, `written` says how
   many (0: the encoder skipped the frame) and `idr` whether it is an IDR. `force_idr` asks
   for an IDR now (a new reader waits for one). */
int mr_h264_encode(struct mr_h264 *encoder, const uint8_t *y, const uint8_t *u, const uint8_t *v, int luma_stride,
                   int chroma_stride, long long timestamp_ms, int force_idr, uint8_t *output, size_t capacity,
                   size_t *written, int *idr);

/* The stream's SPS and PPS as Annex B into `output` (at most `capacity` bytes), `written` says how
   many. They stay the same for the stream's life (constant parameter set ids), so a container
   that wants them up front (MP4's avcC) has them before the first picture. */
int mr_h264_parameter_sets(struct mr_h264 *encoder, uint8_t *output, size_t capacity, size_t *written);

/* The library's version as "major.minor.revision", or the reason it cannot be opened. */
void mr_h264_version(char *text, size_t size);

#endif

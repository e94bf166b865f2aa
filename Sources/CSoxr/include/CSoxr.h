#ifndef MEDIAROUTE_CSOXR_H
#define MEDIAROUTE_CSOXR_H
/*
 * libsoxr's variable-rate resampler (Debian 12's libsoxr0 0.1.3, which libavcodec59 pulls in
 * through libswresample4), opened with dlopen when a live stream first corrects a device's clock
 * drift. Nothing links it: an idle daemon, and every stream that needs no correction, never map it.
 *
 * Interleaved 16-bit PCM in and out. Functions return 0 on success and -1 when the resampler
 * refused (a ratio out of range, a broken stream).
 */
#include <stddef.h>
#include <stdint.h>

/* One resampler for `channels` interleaved channels, whose output-to-input rate ratio can be
   moved smoothly while it runs; NULL with the reason in `error` (libsoxr absent, say). */
struct mr_soxr;
struct mr_soxr *mr_soxr_new(unsigned channels, char *error, size_t size);
void mr_soxr_free(struct mr_soxr *resampler);

/* Input frames per output frame (`io_ratio`, between 0.5 and 2), reached over `slew` output frames. */
int mr_soxr_set_io_ratio(struct mr_soxr *resampler, double io_ratio, size_t slew);

/* Resamples up to `frames_in` frames of `input` into at most `frames_out` frames of `output`;
   `used` and `produced` say how many. */
int mr_soxr_process(struct mr_soxr *resampler, const int16_t *input, size_t frames_in, size_t *used, int16_t *output,
                    size_t frames_out, size_t *produced);

/* Frames of output the resampler holds back (its filter's delay), in output frames. */
double mr_soxr_delay(struct mr_soxr *resampler);

#endif

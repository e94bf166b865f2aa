/*
 * libsoxr through dlopen: see include/CSoxr.h. The table is one object in this file, so every
 * caller sees the same one. The types come from Debian's libsoxr-dev for the same version
 * (0.1.3), so the calls match the library.
 */
#include "CSoxr.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <soxr.h>

static struct {
    void *library;
    soxr_t (*create)(double input_rate, double output_rate, unsigned channels, soxr_error_t *error, soxr_io_spec_t const *io,
                     soxr_quality_spec_t const *quality, soxr_runtime_spec_t const *runtime);
    soxr_error_t (*process)(soxr_t resampler, soxr_in_t input, size_t input_length, size_t *used, soxr_out_t output,
                            size_t output_length, size_t *produced);
    soxr_error_t (*set_io_ratio)(soxr_t resampler, double io_ratio, size_t slew);
    double (*delay)(soxr_t resampler);
    void (*delete)(soxr_t resampler);
    soxr_io_spec_t (*io_spec)(soxr_datatype_t input, soxr_datatype_t output);
    soxr_quality_spec_t (*quality_spec)(unsigned long recipe, unsigned long flags);
    soxr_runtime_spec_t (*runtime_spec)(unsigned threads);
} api;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char open_error[256];
static int opened;

#define BIND(field, symbol)                                                                     \
    do {                                                                                        \
        *(void **)(&api.field) = dlsym(api.library, symbol);                                    \
        if (!api.field) {                                                                       \
            snprintf(open_error, sizeof open_error, "libsoxr.so.0 has no %s", symbol);          \
            return;                                                                             \
        }                                                                                       \
    } while (0)

static void open_once(void) {
    api.library = dlopen("libsoxr.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!api.library) {
        snprintf(open_error, sizeof open_error, "%s", dlerror());
        return;
    }
    BIND(create, "soxr_create");
    BIND(process, "soxr_process");
    BIND(set_io_ratio, "soxr_set_io_ratio");
    BIND(delay, "soxr_delay");
    BIND(delete, "soxr_delete");
    BIND(io_spec, "soxr_io_spec");
    BIND(quality_spec, "soxr_quality_spec");
    BIND(runtime_spec, "soxr_runtime_spec");
    opened = 1;
}

struct mr_soxr {
    soxr_t resampler;
};

/* The largest io ratio the resampler is made for: a clock drift is parts per million, but the
   ratio may be set anywhere up to this (the caller bounds it far tighter). */
static const double maximum_io_ratio = 2.0;

struct mr_soxr *mr_soxr_new(unsigned channels, char *error, size_t size) {
    pthread_once(&once, open_once);
    if (!opened) {
        snprintf(error, size, "%s", open_error);
        return NULL;
    }
    if (channels < 1 || channels > 8) {
        snprintf(error, size, "%u channels", channels);
        return NULL;
    }
    soxr_io_spec_t io = api.io_spec(SOXR_INT16_I, SOXR_INT16_I);
    /* Variable rate (libsoxr's example 5): made for the largest ratio, then set to 1. The quality
       recipe is the library's high one; the variable-rate engine is the same for every recipe. */
    soxr_quality_spec_t quality = api.quality_spec(SOXR_HQ, SOXR_VR);
    soxr_runtime_spec_t runtime = api.runtime_spec(1);
    soxr_error_t failure = NULL;
    soxr_t resampler = api.create(maximum_io_ratio, 1, channels, &failure, &io, &quality, &runtime);
    if (!resampler) {
        snprintf(error, size, "libsoxr: %s", failure ? failure : "no resampler");
        return NULL;
    }
    failure = api.set_io_ratio(resampler, 1.0, 0);
    if (failure) {
        snprintf(error, size, "libsoxr: %s", failure);
        api.delete(resampler);
        return NULL;
    }
    struct mr_soxr *made = calloc(1, sizeof *made);
    if (!made) {
        snprintf(error, size, "out of memory");
        api.delete(resampler);
        return NULL;
    }
    made->resampler = resampler;
    return made;
}

void mr_soxr_free(struct mr_soxr *resampler) {
    if (!resampler) return;
    api.delete(resampler->resampler);
    free(resampler);
}

int mr_soxr_set_io_ratio(struct mr_soxr *resampler, double io_ratio, size_t slew) {
    if (!(io_ratio >= 1.0 / maximum_io_ratio && io_ratio <= maximum_io_ratio)) return -1;
    return api.set_io_ratio(resampler->resampler, io_ratio, slew) ? -1 : 0;
}

int mr_soxr_process(struct mr_soxr *resampler, const int16_t *input, size_t frames_in, size_t *used, int16_t *output,
                    size_t frames_out, size_t *produced) {
    *used = 0;
    *produced = 0;
    return api.process(resampler->resampler, input, frames_in, used, output, frames_out, produced) ? -1 : 0;
}

double mr_soxr_delay(struct mr_soxr *resampler) { return api.delay(resampler->resampler); }

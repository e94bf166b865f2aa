#ifndef MEDIAROUTE_CAVCODEC_SHIM_H
#define MEDIAROUTE_CAVCODEC_SHIM_H
/*
 * FFmpeg's ALAC encoder (AirPlay) and native AAC encoder (Bluetooth A2DP) from libavcodec 59,
 * libavutil 57 (Debian 12's FFmpeg 5.1), opened with dlopen when the first stream that needs
 * one starts. Nothing links libavcodec: it pulls in dozens
 * of codec libraries that an idle daemon has no use for (resident memory, start-up time),
 * and a box without it still streams, in uncompressed ALAC frames. The structures come
 * from the development headers of that same major version, so their layout is the
 * library's; the functions are called through the table below.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libavcodec/avcodec.h>
#include <libavutil/channel_layout.h>
#include <libavutil/frame.h>

struct mr_av_api {
    void *codec_library;
    void *util_library;
    const AVCodec *(*find_encoder)(enum AVCodecID id);
    const AVCodec *(*find_encoder_by_name)(const char *name);
    AVCodecContext *(*alloc_context3)(const AVCodec *codec);
    int (*open2)(AVCodecContext *context, const AVCodec *codec, AVDictionary **options);
    void (*free_context)(AVCodecContext **context);
    int (*send_frame)(AVCodecContext *context, const AVFrame *frame);
    int (*receive_packet)(AVCodecContext *context, AVPacket *packet);
    AVPacket *(*packet_alloc)(void);
    void (*packet_free)(AVPacket **packet);
    void (*packet_unref)(AVPacket *packet);
    AVFrame *(*frame_alloc)(void);
    void (*frame_free)(AVFrame **frame);
    int (*frame_get_buffer)(AVFrame *frame, int align);
    int (*frame_make_writable)(AVFrame *frame);
    void (*channel_layout_default)(AVChannelLayout *layout, int channels);
    int (*channel_layout_copy)(AVChannelLayout *destination, const AVChannelLayout *source);
    void (*log_set_level)(int level);
    int (*dict_set)(AVDictionary **dictionary, const char *key, const char *value, int flags);
    void (*dict_free)(AVDictionary **dictionary);
};

/*
 * The table is a `static` in a `static inline` function: one copy per object file Swift emits,
 * and a release build compiles a module's Swift files into separate objects. So every call of
 * these functions for one encoder must be in one Swift file and not inlined into another
 * (`@inline(never)` on the Swift methods that call them): a FLAC encode inlined into another
 * file read that file's copy, never filled, and was compiled as a trap.
 */
static inline struct mr_av_api *mr_av(void) {
    static struct mr_av_api api;
    return &api;
}

static int mr_av_open_locked(char *error, size_t size);

/*
 * Opens libavcodec and libavutil and finds their functions; 0, or -1 with the reason in `error`.
 * AirPlay and Bluetooth streams start on different threads: the table is filled once, under a lock.
 */
static inline int mr_av_open(char *error, size_t size) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    int result = mr_av_open_locked(error, size);
    pthread_mutex_unlock(&lock);
    return result;
}

static int mr_av_open_locked(char *error, size_t size) {
    struct mr_av_api *api = mr_av();
    if (api->codec_library) return 0;
    void *util = dlopen("libavutil.so.57", RTLD_NOW | RTLD_LOCAL);
    if (!util) {
        snprintf(error, size, "%s", dlerror());
        return -1;
    }
    void *codec = dlopen("libavcodec.so.59", RTLD_NOW | RTLD_LOCAL);
    if (!codec) {
        snprintf(error, size, "%s", dlerror());
        dlclose(util);
        return -1;
    }
/* Stored as the field's own type, not through `*(void **)&field`: a store of another type is one
 * the optimizer may assume never reaches a load of the function pointer (strict aliasing). */
#define MR_AV_SYMBOL(library, field, name) \
    if (!(api->field = (__typeof__(api->field))dlsym(library, name))) { \
        snprintf(error, size, "FFmpeg has no %s", name); dlclose(codec); dlclose(util); return -1; }
    MR_AV_SYMBOL(codec, find_encoder, "avcodec_find_encoder")
    MR_AV_SYMBOL(codec, find_encoder_by_name, "avcodec_find_encoder_by_name")
    MR_AV_SYMBOL(codec, alloc_context3, "avcodec_alloc_context3")
    MR_AV_SYMBOL(codec, open2, "avcodec_open2")
    MR_AV_SYMBOL(codec, free_context, "avcodec_free_context")
    MR_AV_SYMBOL(codec, send_frame, "avcodec_send_frame")
    MR_AV_SYMBOL(codec, receive_packet, "avcodec_receive_packet")
    MR_AV_SYMBOL(codec, packet_alloc, "av_packet_alloc")
    MR_AV_SYMBOL(codec, packet_free, "av_packet_free")
    MR_AV_SYMBOL(codec, packet_unref, "av_packet_unref")
    MR_AV_SYMBOL(util, frame_alloc, "av_frame_alloc")
    MR_AV_SYMBOL(util, frame_free, "av_frame_free")
    MR_AV_SYMBOL(util, frame_get_buffer, "av_frame_get_buffer")
    MR_AV_SYMBOL(util, frame_make_writable, "av_frame_make_writable")
    MR_AV_SYMBOL(util, channel_layout_default, "av_channel_layout_default")
    MR_AV_SYMBOL(util, channel_layout_copy, "av_channel_layout_copy")
    MR_AV_SYMBOL(util, log_set_level, "av_log_set_level")
    MR_AV_SYMBOL(util, dict_set, "av_dict_set")
    MR_AV_SYMBOL(util, dict_free, "av_dict_free")
#undef MR_AV_SYMBOL
    // FFmpeg logs to stderr by itself; the daemon reports failures through its own log.
    api->log_set_level(AV_LOG_QUIET);
    api->util_library = util;
    api->codec_library = codec;
    return 0;
}

/* One FFmpeg encoder of 16-bit interleaved PCM: its context, a frame and a packet kept between calls. */
struct mr_av_encoder {
    AVCodecContext *context;
    AVFrame *frame;
    AVPacket *packet;
    int channels;
};

static inline void mr_av_encoder_close(struct mr_av_encoder *encoder) {
    if (!encoder) return;
    struct mr_av_api *api = mr_av();
    if (encoder->packet) api->packet_free(&encoder->packet);
    if (encoder->frame) api->frame_free(&encoder->frame);
    if (encoder->context) api->free_context(&encoder->context);
    free(encoder);
}

/*
 * The encoder `id` (named `name` in errors) with its context, frame and packet allocated and
 * the context set to `sample_rate`, `format` and `channels` (the default layout), not opened;
 * NULL with the reason.
 */
static inline struct mr_av_encoder *mr_av_encoder_new(enum AVCodecID id, const char *name, int sample_rate, enum AVSampleFormat format, int channels,
                                                      const AVCodec **found, char *error, size_t size) {
    if (mr_av_open(error, size) != 0) return NULL;
    struct mr_av_api *api = mr_av();
    const AVCodec *codec = api->find_encoder(id);
    if (!codec) {
        snprintf(error, size, "this libavcodec has no %s encoder", name);
        return NULL;
    }
    struct mr_av_encoder *encoder = calloc(1, sizeof *encoder);
    if (!encoder) {
        snprintf(error, size, "out of memory");
        return NULL;
    }
    encoder->channels = channels;
    encoder->context = api->alloc_context3(codec);
    encoder->frame = api->frame_alloc();
    encoder->packet = api->packet_alloc();
    if (!encoder->context || !encoder->frame || !encoder->packet) {
        snprintf(error, size, "out of memory");
        mr_av_encoder_close(encoder);
        return NULL;
    }
    encoder->context->sample_rate = sample_rate;
    encoder->context->sample_fmt = format;
    api->channel_layout_default(&encoder->context->ch_layout, channels);
    encoder->context->time_base = (AVRational){1, sample_rate};
    *found = codec;
    return encoder;
}

/* The opened encoder's extradata (ALAC's magic cookie, FLAC's STREAMINFO): its length, or -1 when it does not fit. */
static inline int mr_av_encoder_extradata(struct mr_av_encoder *encoder, uint8_t *out, int capacity) {
    AVCodecContext *context = encoder->context;
    if (!context->extradata || context->extradata_size > capacity) return -1;
    memcpy(out, context->extradata, (size_t)context->extradata_size);
    return context->extradata_size;
}

/* Copies `frames` interleaved S16LE frames of `pcm` into the encoder's planar 16-bit frame. */
static inline void mr_av_encoder_fill_s16p(struct mr_av_encoder *encoder, const uint8_t *pcm, int frames) {
    int channels = encoder->channels;
    for (int channel = 0; channel < channels; channel++) {
        int16_t *plane = (int16_t *)encoder->frame->extended_data[channel];
        for (int index = 0; index < frames; index++) {
            const uint8_t *sample = pcm + ((size_t)index * (size_t)channels + (size_t)channel) * 2;
            plane[index] = (int16_t)(uint16_t)(sample[0] | (sample[1] << 8));
        }
    }
}

/* Gives the opened encoder's frame `samples` samples of `format` in its context's layout; 0, or -1 (out of memory). */
static inline int mr_av_encoder_frame(struct mr_av_encoder *encoder, enum AVSampleFormat format, int samples) {
    struct mr_av_api *api = mr_av();
    AVFrame *frame = encoder->frame;
    frame->format = format;
    frame->nb_samples = samples;
    frame->sample_rate = encoder->context->sample_rate;
    api->channel_layout_copy(&frame->ch_layout, &encoder->context->ch_layout);
    return api->frame_get_buffer(frame, 0) < 0 ? -1 : 0;
}

/* Receives the encoder's next packet into `out`: its length, 0 when it has none yet, or a negative FFmpeg error. */
static inline int mr_av_encoder_receive(struct mr_av_encoder *encoder, uint8_t *out, int capacity) {
    struct mr_av_api *api = mr_av();
    AVPacket *packet = encoder->packet;
    int result = api->receive_packet(encoder->context, packet);
    if (result == AVERROR(EAGAIN) || result == AVERROR_EOF) return 0;
    if (result < 0) return result;
    int length = packet->size;
    if (length > capacity) {
        api->packet_unref(packet);
        return AVERROR(ENOSPC);
    }
    memcpy(out, packet->data, (size_t)length);
    api->packet_unref(packet);
    return length;
}

/* ALAC (AirPlay): an encoder taking `frames_per_packet` frames at a time. */
static inline void mr_alac_close(struct mr_av_encoder *encoder) { mr_av_encoder_close(encoder); }

/* An encoder, or NULL with the reason in `error`. */
static inline struct mr_av_encoder *mr_alac_open(int sample_rate, int channels, int frames_per_packet, char *error, size_t size) {
    const AVCodec *codec = NULL;
    struct mr_av_encoder *encoder = mr_av_encoder_new(AV_CODEC_ID_ALAC, "ALAC", sample_rate, AV_SAMPLE_FMT_S16P, channels, &codec, error, size);
    if (!encoder) return NULL;
    struct mr_av_api *api = mr_av();
    AVCodecContext *context = encoder->context;
    int result = api->open2(context, codec, NULL);
    if (result < 0) {
        snprintf(error, size, "the ALAC encoder did not open (error %d)", result);
        mr_alac_close(encoder);
        return NULL;
    }
    /*
     * FFmpeg 5.1's encoder sets its frame size to 4096 when it opens, and libavcodec takes a
     * shorter frame only as the stream's last. Each frame it writes carries its own sample
     * count when it is shorter than 4096, as RAOP's 352-sample frames are, so the size is
     * set after opening: libavcodec then takes every 352-sample frame as a whole one. The
     * magic cookie keeps 4096; the SDP announces 352 (ALACEncoder.swift).
     */
    if (frames_per_packet <= 0 || frames_per_packet > context->frame_size) {
        snprintf(error, size, "the ALAC encoder takes at most %d frames a packet, not %d", context->frame_size, frames_per_packet);
        mr_alac_close(encoder);
        return NULL;
    }
    context->frame_size = frames_per_packet;
    if (mr_av_encoder_frame(encoder, AV_SAMPLE_FMT_S16P, frames_per_packet) != 0) {
        snprintf(error, size, "out of memory");
        mr_alac_close(encoder);
        return NULL;
    }
    return encoder;
}

/* The encoder's ALAC magic cookie (its configuration, 36 bytes); its length, or -1 when it does not fit. */
static inline int mr_alac_cookie(struct mr_av_encoder *encoder, uint8_t *out, int capacity) { return mr_av_encoder_extradata(encoder, out, capacity); }

/*
 * Encodes `frames` (at most frames_per_packet) interleaved S16LE frames into `out`: the
 * packet's length, 0 when the encoder gave none, or a negative FFmpeg error.
 */
static inline int mr_alac_encode(struct mr_av_encoder *encoder, const uint8_t *pcm, int frames, uint8_t *out, int capacity) {
    struct mr_av_api *api = mr_av();
    AVFrame *frame = encoder->frame;
    if (frames <= 0 || frames > encoder->context->frame_size) return AVERROR(EINVAL);
    int result = api->frame_make_writable(frame);
    if (result < 0) return result;
    frame->nb_samples = frames;
    mr_av_encoder_fill_s16p(encoder, pcm, frames);
    result = api->send_frame(encoder->context, frame);
    if (result < 0) return result;
    return mr_av_encoder_receive(encoder, out, capacity);
}

/*
 * One AAC-LC encoder (FFmpeg's native `aac`) of 16-bit interleaved PCM, 1024 frames a packet:
 * raw access units, framed for A2DP by the caller (LATM, BluetoothAudio's AACEncoder).
 */
static inline void mr_aac_close(struct mr_av_encoder *encoder) { mr_av_encoder_close(encoder); }

/*
 * An encoder at `bit_rate` bits per second with FFmpeg's `aac_coder` named `coder` ("fast",
 * "twoloop", "anmr"), or NULL with the reason in `error`.
 */
static inline struct mr_av_encoder *mr_aac_open(int sample_rate, int channels, int bit_rate, const char *coder, char *error, size_t size) {
    const AVCodec *codec = NULL;
    // FLTP: the only format FFmpeg's native encoder takes.
    struct mr_av_encoder *encoder = mr_av_encoder_new(AV_CODEC_ID_AAC, "AAC", sample_rate, AV_SAMPLE_FMT_FLTP, channels, &codec, error, size);
    if (!encoder) return NULL;
    struct mr_av_api *api = mr_av();
    AVCodecContext *context = encoder->context;
    context->bit_rate = bit_rate;
    context->profile = FF_PROFILE_AAC_LOW;
    AVDictionary *options = NULL;
    if (coder) api->dict_set(&options, "aac_coder", coder, 0);
    int result = api->open2(context, codec, &options);
    api->dict_free(&options);
    if (result < 0) {
        snprintf(error, size, "the AAC encoder did not open (error %d)", result);
        mr_aac_close(encoder);
        return NULL;
    }
    if (mr_av_encoder_frame(encoder, AV_SAMPLE_FMT_FLTP, context->frame_size) != 0) {
        snprintf(error, size, "out of memory");
        mr_aac_close(encoder);
        return NULL;
    }
    return encoder;
}

/* Frames per access unit (1024 for AAC-LC). */
static inline int mr_aac_frame_size(struct mr_av_encoder *encoder) { return encoder->context->frame_size; }

/*
 * Frames of priming the decoder gives before the first input frame (FFmpeg's native encoder:
 * 1024): an access unit's decoded frame d holds input frame d - this.
 */
static inline int mr_aac_initial_padding(struct mr_av_encoder *encoder) { return encoder->context->initial_padding; }

/* The bit rate the encoder runs at now. */
static inline int mr_aac_bit_rate(struct mr_av_encoder *encoder) { return (int)encoder->context->bit_rate; }

/*
 * Changes the target bit rate of an open encoder: FFmpeg's native encoder reads
 * `bit_rate` for each frame's bit budget, so the next frames follow it.
 */
static inline void mr_aac_set_bit_rate(struct mr_av_encoder *encoder, int bit_rate) { encoder->context->bit_rate = bit_rate; }

/*
 * Encodes one frame of `frame_size` interleaved S16LE frames (NULL at the end: drains) into
 * `out`: the access unit's length, 0 when the encoder gave none yet, or a negative FFmpeg error.
 */
static inline int mr_aac_encode(struct mr_av_encoder *encoder, const uint8_t *pcm, uint8_t *out, int capacity) {
    struct mr_av_api *api = mr_av();
    int result;
    if (pcm) {
        AVFrame *frame = encoder->frame;
        result = api->frame_make_writable(frame);
        if (result < 0) return result;
        int frames = encoder->context->frame_size;
        int channels = encoder->channels;
        for (int channel = 0; channel < channels; channel++) {
            float *plane = (float *)frame->extended_data[channel];
            for (int index = 0; index < frames; index++) {
                const uint8_t *sample = pcm + ((size_t)index * (size_t)channels + (size_t)channel) * 2;
                plane[index] = (float)(int16_t)(uint16_t)(sample[0] | (sample[1] << 8)) / 32768.0f;
            }
        }
        result = api->send_frame(encoder->context, frame);
    } else {
        result = api->send_frame(encoder->context, NULL);
        if (result == AVERROR_EOF) result = 0;
    }
    if (result < 0) return result;
    return mr_av_encoder_receive(encoder, out, capacity);
}

/*
 * FLAC (live streams to renderers that list no PCM): FFmpeg's encoder of interleaved 16-bit
 * PCM, `frame_size` frames a FLAC frame (fixed block size), at `compression_level` (0: the
 * fastest; a live stream favours CPU over the last bytes).
 */
static inline void mr_flac_close(struct mr_av_encoder *encoder) { mr_av_encoder_close(encoder); }

/* An encoder, or NULL with the reason in `error`. */
static inline struct mr_av_encoder *mr_flac_open(int sample_rate, int channels, int frame_size, int compression_level, char *error, size_t size) {
    const AVCodec *codec = NULL;
    struct mr_av_encoder *encoder = mr_av_encoder_new(AV_CODEC_ID_FLAC, "FLAC", sample_rate, AV_SAMPLE_FMT_S16, channels, &codec, error, size);
    if (!encoder) return NULL;
    struct mr_av_api *api = mr_av();
    AVCodecContext *context = encoder->context;
    context->frame_size = frame_size;
    context->compression_level = compression_level;
    int result = api->open2(context, codec, NULL);
    if (result < 0) {
        snprintf(error, size, "the FLAC encoder did not open (error %d)", result);
        mr_flac_close(encoder);
        return NULL;
    }
    if (context->frame_size != frame_size || mr_av_encoder_frame(encoder, AV_SAMPLE_FMT_S16, frame_size) != 0) {
        snprintf(error, size, "the FLAC encoder did not take %d-frame blocks", frame_size);
        mr_flac_close(encoder);
        return NULL;
    }
    return encoder;
}

/* The stream's STREAMINFO (34 bytes, written by the encoder when it opens); its length, or -1 when it does not fit. */
static inline int mr_flac_streaminfo(struct mr_av_encoder *encoder, uint8_t *out, int capacity) { return mr_av_encoder_extradata(encoder, out, capacity); }

/*
 * Encodes one block of `frame_size` interleaved S16LE frames into `out`: the FLAC frame's
 * length, 0 when the encoder gave none, or a negative FFmpeg error.
 */
static inline int mr_flac_encode(struct mr_av_encoder *encoder, const uint8_t *pcm, uint8_t *out, int capacity) {
    struct mr_av_api *api = mr_av();
    AVFrame *frame = encoder->frame;
    int result = api->frame_make_writable(frame);
    if (result < 0) return result;
    memcpy(frame->data[0], pcm, (size_t)encoder->context->frame_size * (size_t)encoder->channels * 2);
    result = api->send_frame(encoder->context, frame);
    if (result < 0) return result;
    return mr_av_encoder_receive(encoder, out, capacity);
}

/*
 * MP3 (live streams to renderers that list only `audio/mpeg`): FFmpeg's `libmp3lame` encoder
 * (Debian's libavcodec links LAME) of 16-bit PCM, 1 152 frames an MP3 frame, constant
 * `bit_rate`. The bit reservoir is off, so that every frame decodes on its own: a renderer
 * that joins the stream mid-way starts at any frame.
 */
static inline void mr_mp3_close(struct mr_av_encoder *encoder) { mr_av_encoder_close(encoder); }

/* An encoder, or NULL with the reason in `error`. */
static inline struct mr_av_encoder *mr_mp3_open(int sample_rate, int channels, int bit_rate, char *error, size_t size) {
    const AVCodec *codec = NULL;
    struct mr_av_encoder *encoder = mr_av_encoder_new(AV_CODEC_ID_MP3, "MP3", sample_rate, AV_SAMPLE_FMT_S16P, channels, &codec, error, size);
    if (!encoder) return NULL;
    struct mr_av_api *api = mr_av();
    AVCodecContext *context = encoder->context;
    context->bit_rate = bit_rate;
    AVDictionary *options = NULL;
    api->dict_set(&options, "reservoir", "0", 0);
    int result = api->open2(context, codec, &options);
    api->dict_free(&options);
    if (result < 0) {
        snprintf(error, size, "the MP3 encoder did not open (error %d)", result);
        mr_mp3_close(encoder);
        return NULL;
    }
    if (context->frame_size != 1152 || mr_av_encoder_frame(encoder, AV_SAMPLE_FMT_S16P, context->frame_size) != 0) {
        snprintf(error, size, "the MP3 encoder did not take 1152-frame blocks");
        mr_mp3_close(encoder);
        return NULL;
    }
    return encoder;
}

/*
 * Encodes one block of 1 152 interleaved S16LE frames and writes every MP3 frame the encoder
 * has ready into `out` (LAME holds the first ones back): their length, 0 when none was ready,
 * or a negative FFmpeg error.
 */
static inline int mr_mp3_encode(struct mr_av_encoder *encoder, const uint8_t *pcm, uint8_t *out, int capacity) {
    struct mr_av_api *api = mr_av();
    AVFrame *frame = encoder->frame;
    int result = api->frame_make_writable(frame);
    if (result < 0) return result;
    mr_av_encoder_fill_s16p(encoder, pcm, encoder->context->frame_size);
    result = api->send_frame(encoder->context, frame);
    if (result < 0) return result;
    int written = 0;
    for (;;) {
        int length = mr_av_encoder_receive(encoder, out + written, capacity - written);
        if (length < 0) return length;
        if (length == 0) return written;
        written += length;
    }
}
/*
 * An H.264 encoder of libavcodec chosen by name: a box's hardware encoder (`h264_v4l2m2m`, the
 * V4L2 memory-to-memory encoder of SoCs, which takes YUV420P or NV12 pictures in memory), or any
 * other that takes them. Low latency: no B-frames, `gop` pictures from one IDR to the next,
 * one packet out per picture in. Its context, a picture and a packet kept between calls (the
 * audio encoders' structure, `channels` unused).
 */
static inline void mr_video_close(struct mr_av_encoder *encoder) { mr_av_encoder_close(encoder); }

/* The encoder `name`, opened for pictures of `width`×`height` (NV12 when `nv12`, else YUV420P); NULL with the reason. */
static inline struct mr_av_encoder *mr_video_open(const char *name, int width, int height, int rate_num, int rate_den, int bit_rate, int gop, int nv12,
                                                        char *error, size_t size) {
    if (mr_av_open(error, size) != 0) return NULL;
    struct mr_av_api *api = mr_av();
    const AVCodec *codec = api->find_encoder_by_name(name);
    if (!codec) {
        snprintf(error, size, "this libavcodec has no %s encoder", name);
        return NULL;
    }
    struct mr_av_encoder *encoder = calloc(1, sizeof *encoder);
    if (!encoder) {
        snprintf(error, size, "out of memory");
        return NULL;
    }
    encoder->context = api->alloc_context3(codec);
    encoder->frame = api->frame_alloc();
    encoder->packet = api->packet_alloc();
    if (!encoder->context || !encoder->frame || !encoder->packet) {
        snprintf(error, size, "out of memory");
        mr_video_close(encoder);
        return NULL;
    }
    AVCodecContext *context = encoder->context;
    context->width = width;
    context->height = height;
    context->pix_fmt = nv12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P;
    context->time_base = (AVRational){rate_den, rate_num};
    context->framerate = (AVRational){rate_num, rate_den};
    context->bit_rate = bit_rate;
    context->gop_size = gop;
    context->max_b_frames = 0;
    // Options of software encoders (a hardware encoder ignores what it does not know): no
    // look-ahead, and a picture asked to be intra is an IDR.
    AVDictionary *options = NULL;
    api->dict_set(&options, "tune", "zerolatency", 0);
    api->dict_set(&options, "forced-idr", "1", 0);
    int result = api->open2(context, codec, &options);
    api->dict_free(&options);
    if (result < 0) {
        snprintf(error, size, "%s would not open for %dx%d (FFmpeg error %d)", name, width, height, result);
        mr_video_close(encoder);
        return NULL;
    }
    AVFrame *frame = encoder->frame;
    frame->format = context->pix_fmt;
    frame->width = width;
    frame->height = height;
    if (api->frame_get_buffer(frame, 0) < 0) {
        snprintf(error, size, "out of memory");
        mr_video_close(encoder);
        return NULL;
    }
    return encoder;
}

/*
 * Encodes one picture (planes of `width`-byte rows, chroma `chroma_width` bytes a row: U then V,
 * or NV12's one interleaved plane in `u`) at `pts` (in frame periods); an IDR when `force_idr`.
 * Writes the access unit (Annex B) into `out`: its length, 0 when the encoder gave none yet, or
 * a negative FFmpeg error; `idr` says whether it is a key picture.
 */
static inline int mr_video_encode(struct mr_av_encoder *encoder, const uint8_t *y, const uint8_t *u, const uint8_t *v, int64_t pts, int force_idr,
                                  uint8_t *out, int capacity, int *idr) {
    struct mr_av_api *api = mr_av();
    AVFrame *frame = encoder->frame;
    if (api->frame_make_writable(frame) < 0) return AVERROR(ENOMEM);
    int width = frame->width, height = frame->height;
    int nv12 = frame->format == AV_PIX_FMT_NV12;
    for (int row = 0; row < height; row++) memcpy(frame->data[0] + (size_t)row * (size_t)frame->linesize[0], y + (size_t)row * (size_t)width, (size_t)width);
    for (int row = 0; row < height / 2; row++) {
        if (nv12) {
            memcpy(frame->data[1] + (size_t)row * (size_t)frame->linesize[1], u + (size_t)row * (size_t)width, (size_t)width);
        } else {
            memcpy(frame->data[1] + (size_t)row * (size_t)frame->linesize[1], u + (size_t)row * (size_t)(width / 2), (size_t)(width / 2));
            memcpy(frame->data[2] + (size_t)row * (size_t)frame->linesize[2], v + (size_t)row * (size_t)(width / 2), (size_t)(width / 2));
        }
    }
    frame->pts = pts;
    frame->pict_type = force_idr ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
    int result = api->send_frame(encoder->context, frame);
    if (result < 0) return result;
    AVPacket *packet = encoder->packet;
    result = api->receive_packet(encoder->context, packet);
    if (result == AVERROR(EAGAIN)) return 0;
    if (result < 0) return result;
    int length = packet->size;
    *idr = (packet->flags & AV_PKT_FLAG_KEY) != 0;
    if (length > capacity) {
        api->packet_unref(packet);
        return AVERROR(ENOSPC);
    }
    memcpy(out, packet->data, (size_t)length);
    api->packet_unref(packet);
    return length;
}

#endif

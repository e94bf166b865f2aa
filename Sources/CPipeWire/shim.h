#ifndef MEDIAROUTE_CPIPEWIRE_SHIM_H
#define MEDIAROUTE_CPIPEWIRE_SHIM_H
/*
 * libpipewire-0.3, opened with dlopen when the PipeWire sink is started: nothing links it,
 * so a box without PipeWire runs every MediaRoute binary and the sink says, in one line,
 * that PipeWire is missing. The SPA helpers used here are header-only (format pods, the
 * loop's add_io); the few libpipewire functions are called through the table below.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <pipewire/pipewire.h>
#include <spa/param/audio/format-utils.h>
#include <spa/param/latency-utils.h>
#include <spa/param/video/format-utils.h>

struct mr_pw_api {
    void *library;
    void (*init)(int *argc, char ***argv);
    struct pw_main_loop *(*main_loop_new)(const struct spa_dict *props);
    struct pw_loop *(*main_loop_get_loop)(struct pw_main_loop *loop);
    int (*main_loop_run)(struct pw_main_loop *loop);
    int (*main_loop_quit)(struct pw_main_loop *loop);
    void (*main_loop_destroy)(struct pw_main_loop *loop);
    struct pw_properties *(*properties_new)(const char *key, ...);
    int (*properties_set)(struct pw_properties *properties, const char *key, const char *value);
    struct pw_stream *(*stream_new_simple)(struct pw_loop *loop, const char *name, struct pw_properties *props,
                                           const struct pw_stream_events *events, void *data);
    int (*stream_connect)(struct pw_stream *stream, enum spa_direction direction, uint32_t target_id,
                          enum pw_stream_flags flags, const struct spa_pod **params, uint32_t n_params);
    struct pw_buffer *(*stream_dequeue_buffer)(struct pw_stream *stream);
    int (*stream_queue_buffer)(struct pw_stream *stream, struct pw_buffer *buffer);
    void (*stream_destroy)(struct pw_stream *stream);
    uint32_t (*stream_get_node_id)(struct pw_stream *stream);
    int (*stream_update_params)(struct pw_stream *stream, const struct spa_pod **params, uint32_t n_params);
};

static inline struct mr_pw_api *mr_pw(void) {
    static struct mr_pw_api api;
    return &api;
}

/* Opens libpipewire and finds its functions; 0, or -1 with the reason in `error`. */
static inline int mr_pw_open(char *error, size_t size) {
    struct mr_pw_api *api = mr_pw();
    if (api->library) return 0;
    void *library = dlopen("libpipewire-0.3.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(error, size, "%s", dlerror());
        return -1;
    }
#define MR_PW_SYMBOL(field, name) \
    if (!(api->field = (__typeof__(api->field))dlsym(library, name))) { snprintf(error, size, "libpipewire has no %s", name); dlclose(library); return -1; }
    MR_PW_SYMBOL(init, "pw_init")
    MR_PW_SYMBOL(main_loop_new, "pw_main_loop_new")
    MR_PW_SYMBOL(main_loop_get_loop, "pw_main_loop_get_loop")
    MR_PW_SYMBOL(main_loop_run, "pw_main_loop_run")
    MR_PW_SYMBOL(main_loop_quit, "pw_main_loop_quit")
    MR_PW_SYMBOL(main_loop_destroy, "pw_main_loop_destroy")
    MR_PW_SYMBOL(properties_new, "pw_properties_new")
    MR_PW_SYMBOL(properties_set, "pw_properties_set")
    MR_PW_SYMBOL(stream_new_simple, "pw_stream_new_simple")
    MR_PW_SYMBOL(stream_connect, "pw_stream_connect")
    MR_PW_SYMBOL(stream_dequeue_buffer, "pw_stream_dequeue_buffer")
    MR_PW_SYMBOL(stream_queue_buffer, "pw_stream_queue_buffer")
    MR_PW_SYMBOL(stream_destroy, "pw_stream_destroy")
    MR_PW_SYMBOL(stream_get_node_id, "pw_stream_get_node_id")
    MR_PW_SYMBOL(stream_update_params, "pw_stream_update_params")
#undef MR_PW_SYMBOL
    api->library = library;
    return 0;
}

/* Stream events with only `process` and `state_changed` set. */
static inline struct pw_stream_events mr_pw_stream_events(void (*process)(void *),
        void (*state_changed)(void *, enum pw_stream_state, enum pw_stream_state, const char *)) {
    struct pw_stream_events events;
    memset(&events, 0, sizeof events);
    events.version = PW_VERSION_STREAM_EVENTS;
    events.process = process;
    events.state_changed = state_changed;
    return events;
}

/* An EnumFormat pod for interleaved PCM (S16LE when !is_float, else F32LE), FL/FR or MONO. */
static inline const struct spa_pod *mr_pw_audio_format(uint8_t *buffer, uint32_t size, int is_float, uint32_t rate, uint32_t channels) {
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, size);
    struct spa_audio_info_raw info;
    memset(&info, 0, sizeof info);
    info.format = is_float ? SPA_AUDIO_FORMAT_F32_LE : SPA_AUDIO_FORMAT_S16_LE;
    info.rate = rate;
    info.channels = channels;
    if (channels == 1) {
        info.position[0] = SPA_AUDIO_CHANNEL_MONO;
    } else {
        info.position[0] = SPA_AUDIO_CHANNEL_FL;
        info.position[1] = SPA_AUDIO_CHANNEL_FR;
    }
    return spa_format_audio_raw_build(&builder, SPA_PARAM_EnumFormat, &info);
}

/* A Latency pod for the sink's port: what it adds downstream (to the speaker), in nanoseconds.
 * PipeWire adds it up along the graph, so a player linked to the node learns it in its delay. */
static inline const struct spa_pod *mr_pw_port_latency(uint8_t *buffer, uint32_t size, uint64_t nanoseconds) {
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, size);
    struct spa_latency_info info = SPA_LATENCY_INFO(SPA_DIRECTION_INPUT);
    info.min_ns = nanoseconds;
    info.max_ns = nanoseconds;
    return spa_latency_build(&builder, SPA_PARAM_Latency, &info);
}

/* Properties of a sink node: media.class Audio/Sink, its names and latency. */
static inline struct pw_properties *mr_pw_sink_properties(const char *node_name, const char *description, const char *latency) {
    return mr_pw()->properties_new(
        PW_KEY_MEDIA_TYPE, "Audio", PW_KEY_MEDIA_CATEGORY, "Playback", PW_KEY_MEDIA_CLASS, "Audio/Sink",
        PW_KEY_NODE_NAME, node_name, PW_KEY_NODE_DESCRIPTION, description, PW_KEY_NODE_LATENCY, latency,
        PW_KEY_MEDIA_ROLE, "Music", NULL);
}

/* Watches `fd` for hang-up and errors on the loop (the daemon ended delivery). */
static inline struct spa_source *mr_pw_watch_hangup(struct pw_loop *loop, int fd, void (*hangup)(void *, int, uint32_t), void *data) {
    return pw_loop_add_io(loop, fd, SPA_IO_ERR | SPA_IO_HUP, false, hangup, data);
}

/* Calls `readable` on the loop when `fd` has bytes (the sink's wake-up pipe). */
static inline struct spa_source *mr_pw_watch_readable(struct pw_loop *loop, int fd, void (*readable)(void *, int, uint32_t), void *data) {
    return pw_loop_add_io(loop, fd, SPA_IO_IN, false, readable, data);
}

/* Quits the loop when a signal comes (SIGTERM from the daemon, SIGINT). */
static inline void mr_pw_quit_on_signal(struct pw_loop *loop, int signal_number, void (*handler)(void *, int), void *data) {
    pw_loop_add_signal(loop, signal_number, handler, data);
}

/* The sink ends with the daemon that started it, even one that was killed. */
static inline int mr_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0); }

/* The first data block of a buffer: where its bytes are and how many. */
static inline uint8_t *mr_pw_buffer_bytes(struct pw_buffer *buffer, uint32_t *size) {
    struct spa_buffer *spa = buffer->buffer;
    if (spa->n_datas < 1 || spa->datas[0].data == NULL || spa->datas[0].chunk == NULL) { *size = 0; return NULL; }
    struct spa_data *data = &spa->datas[0];
    uint32_t offset = SPA_MIN(data->chunk->offset, data->maxsize);
    *size = SPA_MIN(data->chunk->size, data->maxsize - offset);
    return (uint8_t *)data->data + offset;
}

/* Stream events with `process`, `state_changed` and `param_changed` set (a video stream learns
 * its format from param_changed). */
static inline struct pw_stream_events mr_pw_video_stream_events(void (*process)(void *),
        void (*state_changed)(void *, enum pw_stream_state, enum pw_stream_state, const char *),
        void (*param_changed)(void *, uint32_t, const struct spa_pod *)) {
    struct pw_stream_events events = mr_pw_stream_events(process, state_changed);
    events.param_changed = param_changed;
    return events;
}

/* The raw video formats the node takes, in the order it prefers them (4:2:0 first: no
 * conversion), any size from 16x16 to 4096x2304 (default `width`x`height`) and any frame
 * rate up to 120 (0/1 is a screen cast's "variable": its maxFramerate is used). */
static inline const struct spa_pod *mr_pw_video_formats(uint8_t *buffer, uint32_t size, uint32_t width, uint32_t height, uint32_t rate) {
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, size);
    struct spa_rectangle size_default = SPA_RECTANGLE(width, height), size_min = SPA_RECTANGLE(16, 16), size_max = SPA_RECTANGLE(4096, 2304);
    struct spa_fraction rate_default = SPA_FRACTION(rate, 1), rate_min = SPA_FRACTION(0, 1), rate_max = SPA_FRACTION(120, 1);
    return (const struct spa_pod *)spa_pod_builder_add_object(&builder,
        SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat,
        SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
        SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw),
        SPA_FORMAT_VIDEO_format, SPA_POD_CHOICE_ENUM_Id(12,
            SPA_VIDEO_FORMAT_I420, SPA_VIDEO_FORMAT_I420, SPA_VIDEO_FORMAT_NV12, SPA_VIDEO_FORMAT_YUY2,
            SPA_VIDEO_FORMAT_BGRx, SPA_VIDEO_FORMAT_BGRA, SPA_VIDEO_FORMAT_RGBx, SPA_VIDEO_FORMAT_RGBA,
            SPA_VIDEO_FORMAT_xRGB, SPA_VIDEO_FORMAT_ARGB, SPA_VIDEO_FORMAT_xBGR, SPA_VIDEO_FORMAT_ABGR),
        SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&size_default, &size_min, &size_max),
        SPA_FORMAT_VIDEO_framerate, SPA_POD_CHOICE_RANGE_Fraction(&rate_default, &rate_min, &rate_max));
}

/* The raw video format PipeWire settled on: 0, or -1 when `param` is not raw video.
 * `format` is 0 I420, 1 NV12, 2 YUY2, 3 BGRx/BGRA, 4 RGBx/RGBA, 5 xRGB/ARGB, 6 xBGR/ABGR, -1 other. */
static inline int mr_pw_parse_video_format(const struct spa_pod *param, int *format, uint32_t *width, uint32_t *height,
                                           uint32_t *rate_num, uint32_t *rate_den, uint32_t *max_num, uint32_t *max_den) {
    uint32_t media_type = 0, media_subtype = 0;
    if (param == NULL || spa_format_parse(param, &media_type, &media_subtype) < 0) return -1;
    if (media_type != SPA_MEDIA_TYPE_video || media_subtype != SPA_MEDIA_SUBTYPE_raw) return -1;
    struct spa_video_info_raw info;
    memset(&info, 0, sizeof info);
    if (spa_format_video_raw_parse(param, &info) < 0) return -1;
    switch (info.format) {
    case SPA_VIDEO_FORMAT_I420: *format = 0; break;
    case SPA_VIDEO_FORMAT_NV12: *format = 1; break;
    case SPA_VIDEO_FORMAT_YUY2: *format = 2; break;
    case SPA_VIDEO_FORMAT_BGRx: case SPA_VIDEO_FORMAT_BGRA: *format = 3; break;
    case SPA_VIDEO_FORMAT_RGBx: case SPA_VIDEO_FORMAT_RGBA: *format = 4; break;
    case SPA_VIDEO_FORMAT_xRGB: case SPA_VIDEO_FORMAT_ARGB: *format = 5; break;
    case SPA_VIDEO_FORMAT_xBGR: case SPA_VIDEO_FORMAT_ABGR: *format = 6; break;
    default: *format = -1; break;
    }
    *width = info.size.width;
    *height = info.size.height;
    *rate_num = info.framerate.num;
    *rate_den = info.framerate.denom;
    *max_num = info.max_framerate.num;
    *max_den = info.max_framerate.denom;
    return 0;
}

/* The buffers a video stream takes once its format is known: mapped memory (plain or a memfd),
 * never a DMA-BUF the CPU cannot read; 2 to 8 of them, one data block of at least `size` bytes
 * with rows `stride` apart (what the producer's own layout needs: a producer that would
 * allocate less is not linked, rather than writing past its buffers). */
static inline const struct spa_pod *mr_pw_video_buffers(uint8_t *buffer, uint32_t size_bytes, int32_t size, int32_t stride) {
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, size_bytes);
    return (const struct spa_pod *)spa_pod_builder_add_object(&builder,
        SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 8),
        SPA_PARAM_BUFFERS_blocks, SPA_POD_Int(1),
        SPA_PARAM_BUFFERS_size, SPA_POD_CHOICE_RANGE_Int(size, size, INT32_MAX),
        SPA_PARAM_BUFFERS_stride, SPA_POD_CHOICE_RANGE_Int(stride, stride, INT32_MAX),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemPtr) | (1 << SPA_DATA_MemFd)));
}

/* Properties of a video sink node: media.class Video/Sink, its names. */
static inline struct pw_properties *mr_pw_video_sink_properties(const char *node_name, const char *description) {
    return mr_pw()->properties_new(
        PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Playback", PW_KEY_MEDIA_CLASS, "Video/Sink",
        PW_KEY_NODE_NAME, node_name, PW_KEY_NODE_DESCRIPTION, description, NULL);
}

/* Properties of a capture stream from the node named `target` (a camera, a screen cast). */
static inline struct pw_properties *mr_pw_video_capture_properties(const char *target) {
    return mr_pw()->properties_new(
        PW_KEY_MEDIA_TYPE, "Video", PW_KEY_MEDIA_CATEGORY, "Capture", PW_KEY_MEDIA_ROLE, "Screen",
        PW_KEY_NODE_NAME, "mediaroute.mirror", PW_KEY_TARGET_OBJECT, target,
        /* Only that node: never the default camera instead, never another one after it goes. */
        PW_KEY_NODE_DONT_RECONNECT, "true", "node.dont-fallback", "true", NULL);
}

/* Data block `index` of a buffer: its bytes, their count and the stride of its rows. */
static inline uint8_t *mr_pw_buffer_plane(struct pw_buffer *buffer, uint32_t index, uint32_t *size, int32_t *stride) {
    struct spa_buffer *spa = buffer->buffer;
    *size = 0;
    *stride = 0;
    if (index >= spa->n_datas) return NULL;
    struct spa_data *data = &spa->datas[index];
    if (data->data == NULL || data->chunk == NULL) return NULL;
    uint32_t offset = SPA_MIN(data->chunk->offset, data->maxsize);
    *size = SPA_MIN(data->chunk->size, data->maxsize - offset);
    /* A chunk of size 0 is no new picture (a screen cast whose only change is the cursor's). */
    if (data->chunk->flags & SPA_CHUNK_FLAG_CORRUPTED) *size = 0;
    *stride = data->chunk->stride;
    return (uint8_t *)data->data + offset;
}

/* How many data blocks a buffer has. */
static inline uint32_t mr_pw_buffer_planes(struct pw_buffer *buffer) { return buffer->buffer->n_datas; }
#endif

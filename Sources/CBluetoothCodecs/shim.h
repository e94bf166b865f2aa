#ifndef MEDIAROUTE_CBLUETOOTHCODECS_SHIM_H
#define MEDIAROUTE_CBLUETOOTHCODECS_SHIM_H
/*
 * The Bluetooth codec libraries Debian ships as shared libraries only, opened with dlopen when a
 * stream first needs one: aptX and aptX HD (libfreeaptx 0.1, `libfreeaptx.so.0`), LDAC (AOSP's
 * encoder, `libldacBT_enc.so.2`) and LDAC's adaptive bit rate (`libldacBT_abr.so.2`). A box without
 * one offers one codec less (a notice at start), never fails. The prototypes are the libraries'
 * own (freeaptx.h, ldacBT.h, ldacBT_abr.h, whose -dev packages a box need not have); the
 * functions are called through the tables below.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

struct aptx_context;
typedef struct _st_ldacbt_handle *HANDLE_LDAC_BT;
typedef struct _ldacbt_abr_param *HANDLE_LDAC_ABR;

/* ldacBT.h's values. */
enum {
    MR_LDACBT_SMPL_FMT_S16 = 0x2,
    MR_LDACBT_EQMID_HQ = 0,
    MR_LDACBT_EQMID_SQ = 1,
    MR_LDACBT_EQMID_MQ = 2,
    MR_LDACBT_ENC_LSU = 128,
};

struct mr_aptx_api {
    void *library;
    struct aptx_context *(*init)(int hd);
    void (*finish)(struct aptx_context *ctx);
    size_t (*encode)(struct aptx_context *ctx, const unsigned char *input, size_t input_size,
                     unsigned char *output, size_t output_size, size_t *written);
    size_t (*decode)(struct aptx_context *ctx, const unsigned char *input, size_t input_size,
                     unsigned char *output, size_t output_size, size_t *written);
};

struct mr_ldac_api {
    void *library;
    void *abr_library;
    HANDLE_LDAC_BT (*get_handle)(void);
    void (*free_handle)(HANDLE_LDAC_BT handle);
    int (*init_handle_encode)(HANDLE_LDAC_BT handle, int mtu, int eqmid, int cm, int fmt, int sf);
    int (*set_eqmid)(HANDLE_LDAC_BT handle, int eqmid);
    int (*get_eqmid)(HANDLE_LDAC_BT handle);
    int (*get_bitrate)(HANDLE_LDAC_BT handle);
    int (*encode)(HANDLE_LDAC_BT handle, void *pcm, int *pcm_used, unsigned char *stream, int *stream_size, int *frame_count);
    int (*get_error_code)(HANDLE_LDAC_BT handle);
    /* The adaptive bit rate, NULL when libldacBT_abr.so.2 is absent. */
    HANDLE_LDAC_ABR (*abr_get_handle)(void);
    void (*abr_free_handle)(HANDLE_LDAC_ABR handle);
    int (*abr_init)(HANDLE_LDAC_ABR handle, unsigned int interval_ms);
    int (*abr_set_thresholds)(HANDLE_LDAC_ABR handle, unsigned int critical, unsigned int dangerous_trend, unsigned int safety);
    int (*abr_proc)(HANDLE_LDAC_BT handle, HANDLE_LDAC_ABR abr, unsigned int queue_depth, unsigned int enable);
};

static inline struct mr_aptx_api *mr_aptx(void) {
    static struct mr_aptx_api api;
    return &api;
}

static inline struct mr_ldac_api *mr_ldac(void) {
    static struct mr_ldac_api api;
    return &api;
}

static pthread_mutex_t mr_bluetooth_codecs_lock = PTHREAD_MUTEX_INITIALIZER;

#define MR_SYMBOL(library, table, field, name) \
    if (!((table)->field = (__typeof__((table)->field))dlsym(library, name))) { \
        snprintf(error, size, "%s has no %s", #library, name); dlclose(library); goto fail; }

/* Opens libfreeaptx once; 0, or -1 with the reason in `error`. */
static inline int mr_aptx_open(char *error, size_t size) {
    struct mr_aptx_api *api = mr_aptx();
    pthread_mutex_lock(&mr_bluetooth_codecs_lock);
    if (api->library) {
        pthread_mutex_unlock(&mr_bluetooth_codecs_lock);
        return 0;
    }
    void *libfreeaptx = dlopen("libfreeaptx.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!libfreeaptx) {
        snprintf(error, size, "%s", dlerror());
        goto fail;
    }
    MR_SYMBOL(libfreeaptx, api, init, "aptx_init")
    MR_SYMBOL(libfreeaptx, api, finish, "aptx_finish")
    MR_SYMBOL(libfreeaptx, api, encode, "aptx_encode")
    MR_SYMBOL(libfreeaptx, api, decode, "aptx_decode")
    api->library = libfreeaptx;
    pthread_mutex_unlock(&mr_bluetooth_codecs_lock);
    return 0;
fail:
    pthread_mutex_unlock(&mr_bluetooth_codecs_lock);
    return -1;
}

/* Opens the LDAC encoder once (and its adaptive bit rate when present); 0, or -1 with the reason. */
static inline int mr_ldac_open(char *error, size_t size) {
    struct mr_ldac_api *api = mr_ldac();
    pthread_mutex_lock(&mr_bluetooth_codecs_lock);
    if (api->library) {
        pthread_mutex_unlock(&mr_bluetooth_codecs_lock);
        return 0;
    }
    void *libldacBT_enc = dlopen("libldacBT_enc.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!libldacBT_enc) {
        snprintf(error, size, "%s", dlerror());
        goto fail;
    }
    MR_SYMBOL(libldacBT_enc, api, get_handle, "ldacBT_get_handle")
    MR_SYMBOL(libldacBT_enc, api, free_handle, "ldacBT_free_handle")
    MR_SYMBOL(libldacBT_enc, api, init_handle_encode, "ldacBT_init_handle_encode")
    MR_SYMBOL(libldacBT_enc, api, set_eqmid, "ldacBT_set_eqmid")
    MR_SYMBOL(libldacBT_enc, api, get_eqmid, "ldacBT_get_eqmid")
    MR_SYMBOL(libldacBT_enc, api, get_bitrate, "ldacBT_get_bitrate")
    MR_SYMBOL(libldacBT_enc, api, encode, "ldacBT_encode")
    MR_SYMBOL(libldacBT_enc, api, get_error_code, "ldacBT_get_error_code")
    api->library = libldacBT_enc;
    /* The ABR library names the encoder as its own dependency (DT_NEEDED): dlopen shares the loaded copy. */
    void *abr = dlopen("libldacBT_abr.so.2", RTLD_NOW | RTLD_LOCAL);
    if (abr) {
        api->abr_get_handle = (__typeof__(api->abr_get_handle))dlsym(abr, "ldac_ABR_get_handle");
        api->abr_free_handle = (__typeof__(api->abr_free_handle))dlsym(abr, "ldac_ABR_free_handle");
        api->abr_init = (__typeof__(api->abr_init))dlsym(abr, "ldac_ABR_Init");
        api->abr_set_thresholds = (__typeof__(api->abr_set_thresholds))dlsym(abr, "ldac_ABR_set_thresholds");
        api->abr_proc = (__typeof__(api->abr_proc))dlsym(abr, "ldac_ABR_Proc");
        if (api->abr_get_handle && api->abr_free_handle && api->abr_init && api->abr_set_thresholds && api->abr_proc) {
            api->abr_library = abr;
        } else {
            api->abr_get_handle = NULL;
            api->abr_proc = NULL;
            dlclose(abr);
        }
    }
    pthread_mutex_unlock(&mr_bluetooth_codecs_lock);
    return 0;
fail:
    pthread_mutex_unlock(&mr_bluetooth_codecs_lock);
    return -1;
}
#undef MR_SYMBOL

/* Calls through the tables (after mr_aptx_open / mr_ldac_open succeeded). */
static inline struct aptx_context *mr_aptx_init(int hd) { return mr_aptx()->init(hd); }
static inline void mr_aptx_finish(struct aptx_context *ctx) { mr_aptx()->finish(ctx); }
static inline size_t mr_aptx_encode(struct aptx_context *ctx, const unsigned char *input, size_t input_size,
                                    unsigned char *output, size_t output_size, size_t *written) {
    return mr_aptx()->encode(ctx, input, input_size, output, output_size, written);
}
static inline size_t mr_aptx_decode(struct aptx_context *ctx, const unsigned char *input, size_t input_size,
                                    unsigned char *output, size_t output_size, size_t *written) {
    return mr_aptx()->decode(ctx, input, input_size, output, output_size, written);
}

static inline HANDLE_LDAC_BT mr_ldac_get_handle(void) { return mr_ldac()->get_handle(); }
static inline void mr_ldac_free_handle(HANDLE_LDAC_BT handle) { mr_ldac()->free_handle(handle); }
static inline int mr_ldac_init_encode(HANDLE_LDAC_BT handle, int mtu, int eqmid, int cm, int sf) {
    return mr_ldac()->init_handle_encode(handle, mtu, eqmid, cm, MR_LDACBT_SMPL_FMT_S16, sf);
}
static inline int mr_ldac_set_eqmid(HANDLE_LDAC_BT handle, int eqmid) { return mr_ldac()->set_eqmid(handle, eqmid); }
static inline int mr_ldac_get_eqmid(HANDLE_LDAC_BT handle) { return mr_ldac()->get_eqmid(handle); }
static inline int mr_ldac_get_bitrate(HANDLE_LDAC_BT handle) { return mr_ldac()->get_bitrate(handle); }
static inline int mr_ldac_get_error_code(HANDLE_LDAC_BT handle) { return mr_ldac()->get_error_code(handle); }
static inline int mr_ldac_encode(HANDLE_LDAC_BT handle, void *pcm, int *pcm_used, unsigned char *stream, int *stream_size, int *frame_count) {
    return mr_ldac()->encode(handle, pcm, pcm_used, stream, stream_size, frame_count);
}
/* The adaptive bit rate's handle, NULL without libldacBT_abr (thresholds as PipeWire sets them). */
static inline HANDLE_LDAC_ABR mr_ldac_abr_open(void) {
    struct mr_ldac_api *api = mr_ldac();
    if (!api->abr_get_handle) return NULL;
    HANDLE_LDAC_ABR abr = api->abr_get_handle();
    if (!abr) return NULL;
    if (api->abr_init(abr, 5) != 0 || api->abr_set_thresholds(abr, 6, 4, 2) != 0) {
        api->abr_free_handle(abr);
        return NULL;
    }
    return abr;
}
static inline void mr_ldac_abr_free(HANDLE_LDAC_ABR abr) { mr_ldac()->abr_free_handle(abr); }
static inline int mr_ldac_abr_proc(HANDLE_LDAC_BT handle, HANDLE_LDAC_ABR abr, unsigned int queue_depth) {
    return mr_ldac()->abr_proc(handle, abr, queue_depth, 1);
}
#endif

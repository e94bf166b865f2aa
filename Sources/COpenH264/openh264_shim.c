/*
 * libopenh264 through dlopen: see include/COpenH264.h. The table is one object in this file, so
 * every caller sees the same one. The types come from Debian's libopenh264-dev for the same
 * version (2.3.1), so the calls match the library.
 */
#include "COpenH264.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wels/codec_api.h>

static struct {
    void *library;
    int (*create)(ISVCEncoder **encoder);
    void (*destroy)(ISVCEncoder *encoder);
    OpenH264Version (*version)(void);
} api;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char open_error[256];
static int opened;

#define BIND(field, symbol)                                                                     \
    do {                                                                                        \
        *(void **)(&api.field) = dlsym(api.library, symbol);                                    \
        if (!api.field) {                                                                       \
            snprintf(open_error, sizeof open_error, "libopenh264.so.7 has no %s", symbol);      \
            return;                                                                             \
        }                                                                                       \
    } while (0)

static void open_once(void) {
    api.library = dlopen("libopenh264.so.7", RTLD_NOW | RTLD_LOCAL);
    if (!api.library) {
        snprintf(open_error, sizeof open_error, "%s", dlerror());
        return;
    }
    BIND(create, "WelsCreateSVCEncoder");
    BIND(destroy, "WelsDestroySVCEncoder");
    BIND(version, "WelsGetCodecVersion");
    opened = 1;
}

struct mr_h264 {
    ISVCEncoder *encoder;
    int width;
    int height;
};

void mr_h264_version(char *text, size_t size) {
    pthread_once(&once, open_once);
    if (!opened) {
        snprintf(text, size, "%s", open_error);
        return;
    }
    OpenH264Version version = api.version();
    snprintf(text, size, "%u.%u.%u", version.uMajor, version.uMinor, version.uRevision);
}

struct mr_h264 *mr_h264_new(int width, int height, float frame_rate, int bit_rate, unsigned intra_period, int screen, char *error,
                            size_t size) {
    pthread_once(&once, open_once);
    if (!opened) {
        snprintf(error, size, "%s", open_error);
        return NULL;
    }
    /* H.264 level 5.1's largest frame; I420 needs even sizes. */
    if (width < 16 || height < 16 || width > 4096 || height > 2304 || (width & 1) || (height & 1)) {
        snprintf(error, size, "%dx%d is not a size the encoder takes (even, 16x16 to 4096x2304)", width, height);
        return NULL;
    }
    if (!(frame_rate >= 1.0f && frame_rate <= 120.0f) || bit_rate < 10000) {
        snprintf(error, size, "%.2f frames/s at %d bit/s", frame_rate, bit_rate);
        return NULL;
    }
    struct mr_h264 *result = calloc(1, sizeof *result);
    if (!result) {
        snprintf(error, size, "out of memory");
        return NULL;
    }
    if (api.create(&result->encoder) != 0 || !result->encoder) {
        snprintf(error, size, "WelsCreateSVCEncoder failed");
        free(result);
        return NULL;
    }
    ISVCEncoder *encoder = result->encoder;
    int quiet = WELS_LOG_QUIET;
    (*encoder)->SetOption(encoder, ENCODER_OPTION_TRACE_LEVEL, &quiet);
    SEncParamExt parameters;
    (*encoder)->GetDefaultParams(encoder, &parameters);
    parameters.iUsageType = screen ? SCREEN_CONTENT_REAL_TIME : CAMERA_VIDEO_REAL_TIME;
    parameters.iPicWidth = width;
    parameters.iPicHeight = height;
    parameters.iTargetBitrate = bit_rate;
    parameters.iMaxBitrate = UNSPECIFIED_BIT_RATE;
    parameters.iRCMode = RC_BITRATE_MODE;
    parameters.fMaxFrameRate = frame_rate;
    parameters.iTemporalLayerNum = 1;
    parameters.iSpatialLayerNum = 1;
    parameters.uiIntraPeriod = intra_period;
    parameters.iNumRefFrame = 1;
    parameters.eSpsPpsIdStrategy = CONSTANT_ID;
    parameters.bPrefixNalAddingCtrl = false;
    parameters.bSimulcastAVC = false;
    parameters.iEntropyCodingModeFlag = 0;
    /* Every frame written is a frame shown: the pacing upstream already decided which to drop. */
    parameters.bEnableFrameSkip = false;
    /* One thread: the route's own thread encodes, and a box has few cores to share. */
    parameters.iMultipleThreadIdc = 1;
    parameters.bEnableSceneChangeDetect = screen ? true : false;
    SSpatialLayerConfig *layer = &parameters.sSpatialLayers[0];
    layer->iVideoWidth = width;
    layer->iVideoHeight = height;
    layer->fFrameRate = frame_rate;
    layer->iSpatialBitrate = bit_rate;
    layer->iMaxSpatialBitrate = UNSPECIFIED_BIT_RATE;
    layer->uiProfileIdc = PRO_BASELINE;
    layer->sSliceArgument.uiSliceMode = SM_SINGLE_SLICE;
    if ((*encoder)->InitializeExt(encoder, &parameters) != 0) {
        snprintf(error, size, "the encoder refused %dx%d at %.2f frames/s and %d bit/s", width, height, frame_rate, bit_rate);
        api.destroy(encoder);
        free(result);
        return NULL;
    }
    int format = videoFormatI420;
    (*encoder)->SetOption(encoder, ENCODER_OPTION_DATAFORMAT, &format);
    result->width = width;
    result->height = height;
    return result;
}

void mr_h264_free(struct mr_h264 *encoder) {
    if (!encoder) return;
    (*encoder->encoder)->Uninitialize(encoder->encoder);
    api.destroy(encoder->encoder);
    free(encoder);
}

static int copy_layers(const SFrameBSInfo *info, uint8_t *output, size_t capacity, size_t *written) {
    size_t total = 0;
    for (int index = 0; index < info->iLayerNum; index++) {
        const SLayerBSInfo *layer = &info->sLayerInfo[index];
        size_t bytes = 0;
        for (int nal = 0; nal < layer->iNalCount; nal++) {
            if (layer->pNalLengthInByte[nal] < 0) return -1;
            bytes += (size_t)layer->pNalLengthInByte[nal];
        }
        if (bytes > capacity - total) return -2;
        memcpy(output + total, layer->pBsBuf, bytes);
        total += bytes;
    }
    *written = total;
    return 0;
}

int mr_h264_parameter_sets(struct mr_h264 *encoder, uint8_t *output, size_t capacity, size_t *written) {
    *written = 0;
    SFrameBSInfo info;
    memset(&info, 0, sizeof info);
    if ((*encoder->encoder)->EncodeParameterSets(encoder->encoder, &info) != cmResultSuccess) return -1;
    return copy_layers(&info, output, capacity, written);
}

int mr_h264_encode(struct mr_h264 *encoder, const uint8_t *y, const uint8_t *u, const uint8_t *v, int luma_stride,
                   int chroma_stride, long long timestamp_ms, int force_idr, uint8_t *output, size_t capacity,
                   size_t *written, int *idr) {
    *written = 0;
    *idr = 0;
    ISVCEncoder *codec = encoder->encoder;
    if (force_idr) (*codec)->ForceIntraFrame(codec, true);
    SSourcePicture picture;
    memset(&picture, 0, sizeof picture);
    picture.iColorFormat = videoFormatI420;
    picture.iPicWidth = encoder->width;
    picture.iPicHeight = encoder->height;
    picture.iStride[0] = luma_stride;
    picture.iStride[1] = chroma_stride;
    picture.iStride[2] = chroma_stride;
    picture.pData[0] = (unsigned char *)y;
    picture.pData[1] = (unsigned char *)u;
    picture.pData[2] = (unsigned char *)v;
    picture.uiTimeStamp = timestamp_ms;
    SFrameBSInfo info;
    memset(&info, 0, sizeof info);
    if ((*codec)->EncodeFrame(codec, &picture, &info) != cmResultSuccess) return -1;
    if (info.eFrameType == videoFrameTypeSkip || info.eFrameType == videoFrameTypeInvalid) return 0;
    int copied = copy_layers(&info, output, capacity, written);
    if (copied != 0) return copied;
    *idr = info.eFrameType == videoFrameTypeIDR;
    return 0;
}

/*
 * libgcrypt through dlopen: see include/CGcrypt.h. The table is one object in this file, so
 * every caller sees the same one (unlike a header-only shim, whose `static` copies differ per
 * object file). The types and constants come from Debian's libgcrypt20-dev for the same
 * major version (1.10), so the calls match the library.
 */
#include "CGcrypt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
/* Without the short mpi_* macros, which would rename the table's fields. */
#define GCRYPT_NO_MPI_MACROS 1
#include <gcrypt.h>

static struct {
    void *library;
    const char *(*check_version)(const char *required);
    gcry_error_t (*control)(enum gcry_ctl_cmds command, ...);
    void (*md_hash_buffer)(int algorithm, void *digest, const void *buffer, size_t length);
    gcry_error_t (*md_open)(gcry_md_hd_t *handle, int algorithm, unsigned int flags);
    gcry_error_t (*md_setkey)(gcry_md_hd_t handle, const void *key, size_t length);
    void (*md_write)(gcry_md_hd_t handle, const void *buffer, size_t length);
    unsigned char *(*md_read)(gcry_md_hd_t handle, int algorithm);
    void (*md_close)(gcry_md_hd_t handle);
    gcry_error_t (*cipher_open)(gcry_cipher_hd_t *handle, int algorithm, int mode, unsigned int flags);
    void (*cipher_close)(gcry_cipher_hd_t handle);
    gcry_error_t (*cipher_setkey)(gcry_cipher_hd_t handle, const void *key, size_t length);
    gcry_error_t (*cipher_setiv)(gcry_cipher_hd_t handle, const void *iv, size_t length);
    gcry_error_t (*cipher_setctr)(gcry_cipher_hd_t handle, const void *counter, size_t length);
    gcry_error_t (*cipher_authenticate)(gcry_cipher_hd_t handle, const void *aad, size_t length);
    gcry_error_t (*cipher_encrypt)(gcry_cipher_hd_t handle, void *out, size_t out_length, const void *in, size_t in_length);
    gcry_error_t (*cipher_decrypt)(gcry_cipher_hd_t handle, void *out, size_t out_length, const void *in, size_t in_length);
    gcry_error_t (*cipher_gettag)(gcry_cipher_hd_t handle, void *tag, size_t length);
    gcry_error_t (*cipher_checktag)(gcry_cipher_hd_t handle, const void *tag, size_t length);
    gpg_error_t (*ecc_mul_point)(int curve, unsigned char *result, const unsigned char *scalar, const unsigned char *point);
    gcry_error_t (*sexp_build)(gcry_sexp_t *result, size_t *error_offset, const char *format, ...);
    void (*sexp_release)(gcry_sexp_t sexp);
    gcry_sexp_t (*sexp_find_token)(gcry_sexp_t list, const char *token, size_t length);
    const char *(*sexp_nth_data)(const gcry_sexp_t list, int number, size_t *length);
    gcry_error_t (*pk_genkey)(gcry_sexp_t *result, gcry_sexp_t parameters);
    gcry_error_t (*pk_sign)(gcry_sexp_t *result, gcry_sexp_t data, gcry_sexp_t key);
    gcry_error_t (*pk_verify)(gcry_sexp_t signature, gcry_sexp_t data, gcry_sexp_t key);
    gcry_mpi_t (*mpi_new)(unsigned int bits);
    void (*mpi_release)(gcry_mpi_t value);
    gcry_error_t (*mpi_scan)(gcry_mpi_t *result, enum gcry_mpi_format format, const void *buffer, size_t length, size_t *scanned);
    gcry_error_t (*mpi_print)(enum gcry_mpi_format format, unsigned char *buffer, size_t length, size_t *written, const gcry_mpi_t value);
    void (*mpi_powm)(gcry_mpi_t w, const gcry_mpi_t b, const gcry_mpi_t e, const gcry_mpi_t m);
    void (*mpi_mulm)(gcry_mpi_t w, gcry_mpi_t u, gcry_mpi_t v, gcry_mpi_t m);
    void (*mpi_addm)(gcry_mpi_t w, gcry_mpi_t u, gcry_mpi_t v, gcry_mpi_t m);
    void (*mpi_subm)(gcry_mpi_t w, gcry_mpi_t u, gcry_mpi_t v, gcry_mpi_t m);
} api;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char open_error[256];
static int opened;

#define BIND(field, symbol)                                                                     \
    do {                                                                                        \
        *(void **)(&api.field) = dlsym(api.library, symbol);                                    \
        if (!api.field) {                                                                       \
            snprintf(open_error, sizeof open_error, "libgcrypt.so.20 has no %s", symbol);       \
            return;                                                                             \
        }                                                                                       \
    } while (0)

static void open_once(void) {
    api.library = dlopen("libgcrypt.so.20", RTLD_NOW | RTLD_LOCAL);
    if (!api.library) {
        snprintf(open_error, sizeof open_error, "%s", dlerror());
        return;
    }
    BIND(check_version, "gcry_check_version");
    BIND(control, "gcry_control");
    BIND(md_hash_buffer, "gcry_md_hash_buffer");
    BIND(md_open, "gcry_md_open");
    BIND(md_setkey, "gcry_md_setkey");
    BIND(md_write, "gcry_md_write");
    BIND(md_read, "gcry_md_read");
    BIND(md_close, "gcry_md_close");
    BIND(cipher_open, "gcry_cipher_open");
    BIND(cipher_close, "gcry_cipher_close");
    BIND(cipher_setkey, "gcry_cipher_setkey");
    BIND(cipher_setiv, "gcry_cipher_setiv");
    BIND(cipher_setctr, "gcry_cipher_setctr");
    BIND(cipher_authenticate, "gcry_cipher_authenticate");
    BIND(cipher_encrypt, "gcry_cipher_encrypt");
    BIND(cipher_decrypt, "gcry_cipher_decrypt");
    BIND(cipher_gettag, "gcry_cipher_gettag");
    BIND(cipher_checktag, "gcry_cipher_checktag");
    BIND(ecc_mul_point, "gcry_ecc_mul_point");
    BIND(sexp_build, "gcry_sexp_build");
    BIND(sexp_release, "gcry_sexp_release");
    BIND(sexp_find_token, "gcry_sexp_find_token");
    BIND(sexp_nth_data, "gcry_sexp_nth_data");
    BIND(pk_genkey, "gcry_pk_genkey");
    BIND(pk_sign, "gcry_pk_sign");
    BIND(pk_verify, "gcry_pk_verify");
    BIND(mpi_new, "gcry_mpi_new");
    BIND(mpi_release, "gcry_mpi_release");
    BIND(mpi_scan, "gcry_mpi_scan");
    BIND(mpi_print, "gcry_mpi_print");
    BIND(mpi_powm, "gcry_mpi_powm");
    BIND(mpi_mulm, "gcry_mpi_mulm");
    BIND(mpi_addm, "gcry_mpi_addm");
    BIND(mpi_subm, "gcry_mpi_subm");
    /* gcry_ecc_mul_point came with 1.9; Debian 12 has 1.10. */
    if (!api.check_version("1.9.0")) {
        snprintf(open_error, sizeof open_error, "libgcrypt is older than 1.9");
        return;
    }
    /* Another library of the process may have initialised it already: then leave it as it is.
       No secure memory: the keys live in Swift arrays anyway, and the pool would be locked RAM. */
    if (!api.control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
        api.control(GCRYCTL_DISABLE_SECMEM, 0);
        api.control(GCRYCTL_INITIALIZATION_FINISHED, 0);
    }
    opened = 1;
}

int mr_gcry_open(char *error, size_t size) {
    pthread_once(&once, open_once);
    if (!opened && error && size) snprintf(error, size, "%s", open_error);
    return opened ? 0 : -1;
}

int mr_gcry_sha512(const uint8_t *data, size_t length, uint8_t digest[64]) {
    if (!opened) return -1;
    api.md_hash_buffer(GCRY_MD_SHA512, digest, data, length);
    return 0;
}

int mr_gcry_sha1(const uint8_t *data, size_t length, uint8_t digest[20]) {
    if (!opened) return -1;
    api.md_hash_buffer(GCRY_MD_SHA1, digest, data, length);
    return 0;
}

int mr_gcry_hmac_sha512(const uint8_t *key, size_t key_length, const uint8_t *data, size_t length, uint8_t mac[64]) {
    if (!opened) return -1;
    gcry_md_hd_t handle;
    if (api.md_open(&handle, GCRY_MD_SHA512, GCRY_MD_FLAG_HMAC)) return -1;
    int status = -1;
    if (!api.md_setkey(handle, key, key_length)) {
        api.md_write(handle, data, length);
        const unsigned char *result = api.md_read(handle, GCRY_MD_SHA512);
        if (result) {
            memcpy(mac, result, 64);
            status = 0;
        }
    }
    api.md_close(handle);
    return status;
}

static gcry_cipher_hd_t aead(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_length) {
    gcry_cipher_hd_t handle;
    if (api.cipher_open(&handle, GCRY_CIPHER_CHACHA20, GCRY_CIPHER_MODE_POLY1305, 0)) return NULL;
    if (api.cipher_setkey(handle, key, 32) || api.cipher_setiv(handle, nonce, 12)
        || (aad_length && api.cipher_authenticate(handle, aad, aad_length))) {
        api.cipher_close(handle);
        return NULL;
    }
    return handle;
}

int mr_gcry_chacha20_poly1305_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_length,
                                   const uint8_t *input, size_t length, uint8_t *output, uint8_t tag[16]) {
    if (!opened) return -1;
    gcry_cipher_hd_t handle = aead(key, nonce, aad, aad_length);
    if (!handle) return -1;
    int status = (length && api.cipher_encrypt(handle, output, length, input, length)) || api.cipher_gettag(handle, tag, 16) ? -1 : 0;
    api.cipher_close(handle);
    return status;
}

int mr_gcry_chacha20_poly1305_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_length,
                                   const uint8_t *input, size_t length, const uint8_t tag[16], uint8_t *output) {
    if (!opened) return -1;
    gcry_cipher_hd_t handle = aead(key, nonce, aad, aad_length);
    if (!handle) return -1;
    int status = -1;
    if (!length || !api.cipher_decrypt(handle, output, length, input, length)) {
        status = api.cipher_checktag(handle, tag, 16) ? 1 : 0;
    }
    api.cipher_close(handle);
    if (status != 0 && length) memset(output, 0, length);
    return status;
}

static gcry_cipher_hd_t aes128(int mode, const uint8_t key[16]) {
    gcry_cipher_hd_t handle;
    if (api.cipher_open(&handle, GCRY_CIPHER_AES128, mode, 0)) return NULL;
    if (api.cipher_setkey(handle, key, 16)) {
        api.cipher_close(handle);
        return NULL;
    }
    return handle;
}

int mr_gcry_aes128_gcm_seal(const uint8_t key[16], const uint8_t *iv, size_t iv_length, const uint8_t *input, size_t length,
                            uint8_t *output, uint8_t tag[16]) {
    if (!opened || iv_length == 0) return -1;
    gcry_cipher_hd_t handle = aes128(GCRY_CIPHER_MODE_GCM, key);
    if (!handle) return -1;
    int status = api.cipher_setiv(handle, iv, iv_length) || (length && api.cipher_encrypt(handle, output, length, input, length))
        || api.cipher_gettag(handle, tag, 16) ? -1 : 0;
    api.cipher_close(handle);
    return status;
}

int mr_gcry_aes128_gcm_open(const uint8_t key[16], const uint8_t *iv, size_t iv_length, const uint8_t *input, size_t length,
                            const uint8_t tag[16], uint8_t *output) {
    if (!opened || iv_length == 0) return -1;
    gcry_cipher_hd_t handle = aes128(GCRY_CIPHER_MODE_GCM, key);
    if (!handle) return -1;
    int status = -1;
    if (!api.cipher_setiv(handle, iv, iv_length) && (!length || !api.cipher_decrypt(handle, output, length, input, length))) {
        status = api.cipher_checktag(handle, tag, 16) ? 1 : 0;
    }
    api.cipher_close(handle);
    if (status != 0 && length) memset(output, 0, length);
    return status;
}

int mr_gcry_aes128_ctr(const uint8_t key[16], const uint8_t counter[16], const uint8_t *input, size_t length, uint8_t *output) {
    if (!opened) return -1;
    gcry_cipher_hd_t handle = aes128(GCRY_CIPHER_MODE_CTR, key);
    if (!handle) return -1;
    int status = api.cipher_setctr(handle, counter, 16) || (length && api.cipher_encrypt(handle, output, length, input, length)) ? -1 : 0;
    api.cipher_close(handle);
    return status;
}

int mr_gcry_x25519(const uint8_t scalar[32], const uint8_t point[32], uint8_t result[32]) {
    if (!opened) return -1;
    return api.ecc_mul_point(GCRY_ECC_CURVE25519, result, scalar, point) ? -1 : 0;
}

/* The `count` bytes of token `name` in `list`, right-aligned into `out` (an EdDSA point may
   come with libgcrypt's 0x40 prefix: the last `count` bytes are the value). */
static int token_bytes(gcry_sexp_t list, const char *name, uint8_t *out, size_t count) {
    gcry_sexp_t token = api.sexp_find_token(list, name, 0);
    if (!token) return -1;
    size_t length = 0;
    const char *data = api.sexp_nth_data(token, 1, &length);
    int status = -1;
    if (data && length >= count && length <= count + 1) {
        memcpy(out, data + (length - count), count);
        status = 0;
    } else if (data && length < count) {
        memset(out, 0, count - length);
        memcpy(out + (count - length), data, length);
        status = 0;
    }
    api.sexp_release(token);
    return status;
}

int mr_gcry_ed25519_generate(uint8_t secret[32], uint8_t public_key[32]) {
    if (!opened) return -1;
    gcry_sexp_t parameters = NULL, pair = NULL;
    int status = -1;
    if (!api.sexp_build(&parameters, NULL, "(genkey(ecc(curve Ed25519)(flags eddsa)))")
        && !api.pk_genkey(&pair, parameters)) {
        gcry_sexp_t private_key = api.sexp_find_token(pair, "private-key", 0);
        if (private_key) {
            status = token_bytes(private_key, "d", secret, 32) || token_bytes(private_key, "q", public_key, 32) ? -1 : 0;
            api.sexp_release(private_key);
        }
    }
    api.sexp_release(pair);
    api.sexp_release(parameters);
    return status;
}

int mr_gcry_ed25519_sign(const uint8_t secret[32], const uint8_t public_key[32], const uint8_t *message, size_t length,
                         uint8_t signature[64]) {
    if (!opened) return -1;
    gcry_sexp_t key = NULL, data = NULL, result = NULL;
    int status = -1;
    if (!api.sexp_build(&key, NULL, "(private-key(ecc(curve Ed25519)(flags eddsa)(q %b)(d %b)))", 32, public_key, 32, secret)
        && !api.sexp_build(&data, NULL, "(data(flags eddsa)(hash-algo sha512)(value %b))", (int)length, message)
        && !api.pk_sign(&result, data, key)) {
        status = token_bytes(result, "r", signature, 32) || token_bytes(result, "s", signature + 32, 32) ? -1 : 0;
    }
    api.sexp_release(result);
    api.sexp_release(data);
    api.sexp_release(key);
    return status;
}

int mr_gcry_ed25519_verify(const uint8_t public_key[32], const uint8_t *message, size_t length, const uint8_t signature[64]) {
    if (!opened) return -1;
    gcry_sexp_t key = NULL, data = NULL, value = NULL;
    int status = -1;
    if (!api.sexp_build(&key, NULL, "(public-key(ecc(curve Ed25519)(flags eddsa)(q %b)))", 32, public_key)
        && !api.sexp_build(&data, NULL, "(data(flags eddsa)(hash-algo sha512)(value %b))", (int)length, message)
        && !api.sexp_build(&value, NULL, "(sig-val(eddsa(r %b)(s %b)))", 32, signature, 32, signature + 32)) {
        status = api.pk_verify(value, data, key) ? 1 : 0;
    }
    api.sexp_release(value);
    api.sexp_release(data);
    api.sexp_release(key);
    return status;
}

static gcry_mpi_t scan(const uint8_t *bytes, size_t length) {
    gcry_mpi_t value = NULL;
    if (length == 0) return api.mpi_new(0);
    return api.mpi_scan(&value, GCRYMPI_FMT_USG, bytes, length, NULL) ? NULL : value;
}

static int print(gcry_mpi_t value, uint8_t *result, size_t result_length) {
    size_t written = 0;
    uint8_t buffer[1024];
    if (result_length > sizeof buffer) return -1;
    if (api.mpi_print(GCRYMPI_FMT_USG, buffer, sizeof buffer, &written, value) || written > result_length) return -1;
    memset(result, 0, result_length - written);
    memcpy(result + (result_length - written), buffer, written);
    return 0;
}

int mr_gcry_modular(int op, const uint8_t *a, size_t a_length, const uint8_t *b, size_t b_length,
                   const uint8_t *modulus, size_t modulus_length, uint8_t *result, size_t result_length) {
    if (!opened) return -1;
    /* A zero modulus (a receiver's bytes could make one) is refused before libgcrypt divides by it. */
    size_t nonzero = 0;
    for (size_t index = 0; index < modulus_length; index++) nonzero |= modulus[index];
    if (!nonzero) return -1;
    gcry_mpi_t u = scan(a, a_length), v = scan(b, b_length), m = scan(modulus, modulus_length), w = api.mpi_new(0);
    int status = -1;
    if (u && v && m && w) {
        switch (op) {
        case MR_GCRY_POWER: api.mpi_powm(w, u, v, m); break;
        case MR_GCRY_PRODUCT: api.mpi_mulm(w, u, v, m); break;
        case MR_GCRY_SUM: api.mpi_addm(w, u, v, m); break;
        default: api.mpi_subm(w, u, v, m); break;
        }
        status = print(w, result, result_length);
    }
    api.mpi_release(u);
    api.mpi_release(v);
    api.mpi_release(m);
    api.mpi_release(w);
    return status;
}

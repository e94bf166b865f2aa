#ifndef MEDIAROUTE_CGCRYPT_H
#define MEDIAROUTE_CGCRYPT_H
/*
 * The primitives AirPlay 2's pairing (HAP) and its encrypted channels need, from libgcrypt 1.10
 * (Debian 12's libgcrypt20: every Debian root has it, apt needs it through libsystemd0), opened
 * with dlopen when the first receiver pairs. Nothing links it: an idle daemon never maps it.
 *
 * Byte strings in, byte strings out; big integers are unsigned big-endian. Each function
 * returns 0 on success, -1 when libgcrypt is not open or refused, and the AEAD open
 * returns 1 when the tag does not match (data forged or damaged).
 */
#include <stddef.h>
#include <stdint.h>

/* Opens libgcrypt.so.20 and initialises it, once per process; on failure writes why into `error`. */
int mr_gcry_open(char *error, size_t size);

int mr_gcry_sha512(const uint8_t *data, size_t length, uint8_t digest[64]);
int mr_gcry_sha1(const uint8_t *data, size_t length, uint8_t digest[20]);
int mr_gcry_hmac_sha512(const uint8_t *key, size_t key_length, const uint8_t *data, size_t length, uint8_t mac[64]);

/* ChaCha20-Poly1305 as RFC 8439 (96-bit nonce). `output` holds `length` bytes. */
int mr_gcry_chacha20_poly1305_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_length,
                                   const uint8_t *input, size_t length, uint8_t *output, uint8_t tag[16]);
int mr_gcry_chacha20_poly1305_open(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad, size_t aad_length,
                                   const uint8_t *input, size_t length, const uint8_t tag[16], uint8_t *output);

/* AES-128 for the device verification Apple TVs ask AirPlay 1 senders for: GCM with an IV of
   `iv_length` bytes (they use 16) and a 16-byte tag; CTR from the 16-byte counter block `counter`.
   `output` holds `length` bytes. */
int mr_gcry_aes128_gcm_seal(const uint8_t key[16], const uint8_t *iv, size_t iv_length, const uint8_t *input, size_t length,
                            uint8_t *output, uint8_t tag[16]);
int mr_gcry_aes128_gcm_open(const uint8_t key[16], const uint8_t *iv, size_t iv_length, const uint8_t *input, size_t length,
                            const uint8_t tag[16], uint8_t *output);
int mr_gcry_aes128_ctr(const uint8_t key[16], const uint8_t counter[16], const uint8_t *input, size_t length, uint8_t *output);

/* X25519 as RFC 7748: `scalar` times the point whose u-coordinate is `point`. */
int mr_gcry_x25519(const uint8_t scalar[32], const uint8_t point[32], uint8_t result[32]);

/* Ed25519 (RFC 8032): a new key pair; a signature with the pair; a check against a public key
   (0: valid, 1: not valid). */
int mr_gcry_ed25519_generate(uint8_t secret[32], uint8_t public_key[32]);
int mr_gcry_ed25519_sign(const uint8_t secret[32], const uint8_t public_key[32], const uint8_t *message, size_t length,
                         uint8_t signature[64]);
int mr_gcry_ed25519_verify(const uint8_t public_key[32], const uint8_t *message, size_t length, const uint8_t signature[64]);

/* Modular arithmetic on unsigned big-endian integers: `result` (result_length bytes, the value
   right-aligned and zero-padded) = a^b mod m (operation 0), a*b mod m (1), a+b mod m (2), a-b mod m (3). */
enum { MR_GCRY_POWER = 0, MR_GCRY_PRODUCT = 1, MR_GCRY_SUM = 2, MR_GCRY_DIFFERENCE = 3 };
int mr_gcry_modular(int operation, const uint8_t *a, size_t a_length, const uint8_t *b, size_t b_length,
                    const uint8_t *modulus, size_t modulus_length, uint8_t *result, size_t result_length);

#endif

/*
 * auth.c - HMAC-SHA256, HKDF-SHA256 and constant-time compares from OpenSSL's libcrypto; random
 * bytes from getrandom (see auth.h for the handshake these serve).
 */
#include "auth.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <string.h>
#include <sys/random.h>

#define TD_AUTH_MAX_INPUT 1024 /* label + transcript; the largest hello is far below */

tpudistResult_t authRandom(void *buf, size_t n, char *err) {
  char *p = buf;
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return tdErr(err, tpudistSystemError, "getrandom: %s", strerror(errno));
    p += got;
    n -= (size_t)got;
  }
  return tpudistSuccess;
}

void authMac(const tdKey *key, const char *label, const void *a, size_t alen, const void *b,
             size_t blen, uint8_t out[TD_MAC_BYTES]) {
  uint8_t in[TD_AUTH_MAX_INPUT];
  size_t ll = strlen(label) + 1, n = 0; /* the label's NUL separates it from the data */
  unsigned int outlen = TD_MAC_BYTES;
  if (ll + alen + blen > sizeof(in)) { /* never with this library's messages: fail closed */
    memset(out, 0, TD_MAC_BYTES);
    authRandom(out, TD_MAC_BYTES, NULL);
    return;
  }
  memcpy(in, label, ll);
  n += ll;
  if (alen) memcpy(in + n, a, alen);
  n += alen;
  if (blen) memcpy(in + n, b, blen);
  n += blen;
  if (!HMAC(EVP_sha256(), key->b, TD_KEY_BYTES, in, n, out, &outlen)) authRandom(out, 32, NULL);
  OPENSSL_cleanse(in, n);
}

int authEqual(const void *a, const void *b, size_t n) {
  return CRYPTO_memcmp(a, b, n) == 0;
}

tpudistResult_t authDeriveKey(const void *ikm, size_t n, const char *label, tdKey *out, char *err) {
  static const unsigned char salt[] = "tpu_dist/kdf/v1";
  size_t outlen = TD_KEY_BYTES;
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
  int ok = ctx && EVP_PKEY_derive_init(ctx) > 0 &&
           EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0 &&
           EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt, sizeof(salt) - 1) > 0 &&
           EVP_PKEY_CTX_set1_hkdf_key(ctx, ikm, (int)n) > 0 &&
           EVP_PKEY_CTX_add1_hkdf_info(ctx, (const unsigned char *)label, (int)strlen(label)) > 0 &&
           EVP_PKEY_derive(ctx, out->b, &outlen) > 0 && outlen == TD_KEY_BYTES;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) return tdErr(err, tpudistSystemError, "HKDF-SHA256 key derivation failed (libcrypto)");
  return tpudistSuccess;
}

void authChildKey(const tdKey *parent, const char *label, uint64_t value, tdKey *out) {
  uint8_t mac[TD_MAC_BYTES];
  authMac(parent, label, &value, sizeof(value), NULL, 0, mac);
  memcpy(out->b, mac, TD_KEY_BYTES);
  OPENSSL_cleanse(mac, sizeof(mac));
}

uint64_t authId64(const tdKey *key, const char *label, const void *data, size_t n) {
  uint8_t mac[TD_MAC_BYTES];
  uint64_t v;
  authMac(key, label, data, n, NULL, 0, mac);
  memcpy(&v, mac, sizeof(v));
  return v;
}

void authProof(const tdKey *key, const char *label, const void *hello, size_t hello_len,
               const uint8_t nonce_r[TD_NONCE_BYTES], int verdict, uint8_t out[TD_MAC_BYTES]) {
  uint8_t tail[TD_NONCE_BYTES + 4];
  int32_t v = verdict;
  memcpy(tail, nonce_r, TD_NONCE_BYTES);
  memcpy(tail + TD_NONCE_BYTES, &v, sizeof(v));
  authMac(key, label, hello, hello_len, tail, sizeof(tail), out);
}

int authProofOk(const tdKey *key, const char *label, const void *hello, size_t hello_len,
                const uint8_t nonce_r[TD_NONCE_BYTES], int verdict,
                const uint8_t got[TD_MAC_BYTES]) {
  uint8_t want[TD_MAC_BYTES];
  authProof(key, label, hello, hello_len, nonce_r, verdict, want);
  return authEqual(want, got, TD_MAC_BYTES);
}

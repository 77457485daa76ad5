/*
 * auth.h - the cryptography of the connection handshakes, over OpenSSL's libcrypto (auth.c): the
 * 256-bit job secret, HMAC-SHA256 proofs, HKDF-SHA256 key derivation and constant-time compares.
 * Nothing here is hand-written crypto; this file only fixes the inputs (labels, transcripts).
 *
 * Every connection (bootstrap rendezvous, socket transport) runs the same mutual
 * challenge-response: initiator -> responder   hello {identity of the connection, nonce_i (32
 * random bytes)} responder -> initiator   challenge {nonce_r (32 random bytes)} initiator ->
 * responder   proof_i = HMAC(key, label_i | hello | nonce_r) responder -> initiator   proof_r =
 * HMAC(key, label_r | hello | nonce_r | verdict) The labels name the protocol and the role
 * (initiator / responder), so a proof never serves the other direction (reflection); both nonces
 * are fresh per connection, so a recorded proof never serves a new one (replay); the hello names
 * the communicator and both ranks, so a proof never serves another connection. The key itself never
 * travels.
 */
#ifndef TD_AUTH_H_
#define TD_AUTH_H_

#include "td_base.h"

#define TD_KEY_BYTES 32
#define TD_NONCE_BYTES 32
#define TD_MAC_BYTES 32

typedef struct {
  uint8_t b[TD_KEY_BYTES];
} tdKey;

/* n bytes from the kernel's CSPRNG (getrandom). */
tpudistResult_t authRandom(void *buf, size_t n, char *err);
/* HMAC-SHA256(key, label | a | b) (b may be NULL with blen 0). */
void authMac(const tdKey *key, const char *label, const void *a, size_t alen, const void *b,
             size_t blen, uint8_t out[TD_MAC_BYTES]);
/* 1 if the n bytes at a and b are equal; the time taken does not depend on the contents. */
int authEqual(const void *a, const void *b, size_t n);
/* HKDF-SHA256(ikm, info = label) into a 256-bit key. */
tpudistResult_t authDeriveKey(const void *ikm, size_t n, const char *label, tdKey *out, char *err);
/* A key derived from parent for one purpose (label) and value (e.g. a split tag). */
void authChildKey(const tdKey *parent, const char *label, uint64_t value, tdKey *out);
/* 64 bits derived from key (label, data): a public identifier that reveals nothing of key. */
uint64_t authId64(const tdKey *key, const char *label, const void *data, size_t n);
/* The proof a side of a handshake sends: HMAC(key, label | hello | nonce_r [| verdict]). */
void authProof(const tdKey *key, const char *label, const void *hello, size_t hello_len,
               const uint8_t nonce_r[TD_NONCE_BYTES], int verdict, uint8_t out[TD_MAC_BYTES]);
/* Checks a received proof against the expected one, in constant time. */
int authProofOk(const tdKey *key, const char *label, const void *hello, size_t hello_len,
                const uint8_t nonce_r[TD_NONCE_BYTES], int verdict,
                const uint8_t got[TD_MAC_BYTES]);

#endif /* TD_AUTH_H_ */

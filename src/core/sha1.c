/* sha1: FIPS 180-4 SHA-1 in one call (see sha1.h): whole blocks straight
 * from the input, then the tail and the padding in one or two blocks. */
#include "sha1.h"

#include <stdint.h>
#include <string.h>

static uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

static void compress(uint32_t h[5], const unsigned char *p) {
  uint32_t w[80];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 80; i++) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f, k;
    if (i < 20) f = (b & c) | (~b & d), k = 0x5a827999;
    else if (i < 40) f = b ^ c ^ d, k = 0x6ed9eba1;
    else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
    else f = b ^ c ^ d, k = 0xca62c1d6;
    uint32_t t = rotl(a, 5) + f + e + k + w[i];
    e = d, d = c, c = rotl(b, 30), b = a, a = t;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

void sha1(const void *data, size_t n, unsigned char digest[SHA1_DIGEST_LEN]) {
  uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  const unsigned char *p = data;
  size_t whole = n / 64 * 64;
  for (size_t i = 0; i < whole; i += 64) compress(h, p + i);
  unsigned char tail[128] = {0};
  size_t rest = n - whole, blocks = rest < 56 ? 1 : 2;
  if (rest) memcpy(tail, p + whole, rest);
  tail[rest] = 0x80;
  uint64_t bits = (uint64_t)n * 8;
  for (int i = 0; i < 8; i++) tail[blocks * 64 - 1 - i] = (unsigned char)(bits >> (8 * i));
  for (size_t i = 0; i < blocks; i++) compress(h, tail + 64 * i);
  for (int i = 0; i < SHA1_DIGEST_LEN; i++) digest[i] = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* sha256: streaming SHA-256 (see sha256.h). */
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t s[8], const unsigned char *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
  }
  s[0] += a, s[1] += b, s[2] += c, s[3] += d, s[4] += e, s[5] += f, s[6] += g, s[7] += h;
}

void sha256_init(sha256_ctx *c) {
  static const uint32_t init[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->state, init, sizeof init);
  c->length = 0;
  c->used = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t n) {
  const unsigned char *p = data;
  c->length += n;
  while (n > 0) {
    if (c->used == 0 && n >= 64) {
      compress(c->state, p);
      p += 64, n -= 64;
      continue;
    }
    size_t take = 64 - c->used < n ? 64 - c->used : n;
    memcpy(c->block + c->used, p, take);
    c->used += take, p += take, n -= take;
    if (c->used == 64) {
      compress(c->state, c->block);
      c->used = 0;
    }
  }
}

void sha256_final_hex(sha256_ctx *c, char hex[65]) {
  uint64_t bits = c->length * 8;
  unsigned char pad[72] = {0x80};
  size_t padlen = (c->used < 56 ? 56 : 120) - c->used;
  for (int i = 0; i < 8; i++) pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
  uint64_t length = c->length;
  sha256_update(c, pad, padlen + 8);
  c->length = length;
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    unsigned char byte = (unsigned char)(c->state[i / 4] >> (24 - 8 * (i % 4)));
    hex[2 * i] = digits[byte >> 4];
    hex[2 * i + 1] = digits[byte & 15];
  }
  hex[64] = '\0';
}

int sha256_file_hex(const char *path, char hex[65], long long *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  sha256_ctx c;
  sha256_init(&c);
  unsigned char chunk[65536];
  ssize_t got;
  while ((got = read(fd, chunk, sizeof chunk)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int saved = errno;
      close(fd);
      errno = saved;
      return -1;
    }
    sha256_update(&c, chunk, (size_t)got);
  }
  close(fd);
  if (size) *size = (long long)c.length;
  sha256_final_hex(&c, hex);
  return 0;
}

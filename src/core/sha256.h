/* sha256: FIPS 180-4 SHA-256, streaming. Pure C; used for the image recipe
 * hash and the sizes-and-digests manifest of a run's outputs. */
#ifndef LUAGENT_SHA256_H
#define LUAGENT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sha256_ctx {
  uint32_t state[8];
  uint64_t length; /* bytes hashed so far */
  unsigned char block[64];
  size_t used;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
/* Writes 64 lower-case hex digits and a NUL into hex. */
void sha256_final_hex(sha256_ctx *c, char hex[65]);
/* Hashes a file in chunks. Returns 0, or -1 with errno set. */
int sha256_file_hex(const char *path, char hex[65], long long *size);

#endif

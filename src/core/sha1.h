/* sha1: FIPS 180-4 SHA-1, one shot. Pure C. Only for the WebSocket handshake
 * (RFC 6455 4.2.2: Sec-WebSocket-Accept is base64(SHA-1(key + GUID))), where
 * SHA-1 is a checksum of the server's reply, not a security measure: never
 * use it to prove anything (sha256.h is the hash for that). */
#ifndef LUAGENT_SHA1_H
#define LUAGENT_SHA1_H

#include <stddef.h>

#define SHA1_DIGEST_LEN 20

/* The digest of n bytes at data. */
void sha1(const void *data, size_t n, unsigned char digest[SHA1_DIGEST_LEN]);

#endif

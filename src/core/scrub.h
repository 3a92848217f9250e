/* scrub: replaces every occurrence of a few byte strings in a stream, however
 * the stream is cut into pieces. What a secret's own host sends back into a
 * sandbox passes through one, so that a value luagent put into the request
 * (an API key in Authorization) and the host echoes (a /headers endpoint, an
 * error page quoting the request) reaches the sandbox as its placeholder.
 * Holds back at most the longest needle less one byte; linear in the bytes
 * times the needles that start with the same byte. Pure C.
 *
 *   scrub *s = scrub_new();
 *   scrub_add(s, needle, n, replacement, rn)   needles of 1..SCRUB_NEEDLE_MAX bytes
 *   scrub_feed(s, data, n, &out)               out gets every byte that can no
 *                                              longer be the start of a needle
 *   scrub_flush(s, &out)                       the end: what was held back
 *   scrub_count(s)                             replacements made so far */
#ifndef LUAGENT_SCRUB_H
#define LUAGENT_SCRUB_H

#include <stddef.h>

#include "buf.h"

#define SCRUB_NEEDLE_MAX 4096

typedef struct scrub scrub;

scrub *scrub_new(void);
/* 0, or -1 (an empty or too long needle, out of memory). */
int scrub_add(scrub *s, const char *needle, size_t n, const char *replacement, size_t rn);
void scrub_feed(scrub *s, const char *data, size_t n, buf *out);
void scrub_flush(scrub *s, buf *out);
size_t scrub_count(const scrub *s);
int scrub_empty(const scrub *s);
void scrub_free(scrub *s);

#endif

/* tar_internal: what the tar writer, reader and extractor share — the
 * block layout of a ustar header, the zero block, and two small containers
 * (a growing array, a set of names). Internal to src/tar_*.c; the public
 * API is tar.h. Pure C. */
#ifndef LUAGENT_TAR_INTERNAL_H
#define LUAGENT_TAR_INTERNAL_H

#include <stddef.h>

#include "buf.h"

#define BLOCK 512
#define END_BLOCKS (2 * BLOCK)
#define META_MAX (1 << 20) /* largest PAX / GNU long-name record we buffer */

/* Header field offsets and widths (POSIX ustar). */
enum {
  H_NAME = 0, H_MODE = 100, H_UID = 108, H_GID = 116, H_SIZE = 124, H_MTIME = 136,
  H_CHKSUM = 148, H_TYPE = 156, H_LINK = 157, H_MAGIC = 257, H_VERSION = 263,
  H_DEVMAJOR = 329, H_DEVMINOR = 337, H_PREFIX = 345
};
#define NAME_LEN 100
#define PREFIX_LEN 155

/* A block of zeros: padding, and the end-of-archive marker. */
extern const char tar_zero_block[BLOCK];

/* Bytes of padding after `size` bytes of data, up to the next block. */
static inline long long tar_padding_of(long long size) { return (BLOCK - size % BLOCK) % BLOCK; }

/* The smaller of a buffer's room and a count of bytes still due. */
static inline size_t tar_min_size(size_t a, long long b) { return (long long)a < b ? a : (size_t)b; }

/* Makes room for one more item: returns the (maybe moved) array, or NULL
 * when out of memory (the old array is then untouched). */
void *tar_grow_array(void *items, size_t *cap, size_t count, size_t size);

/* Maps names to a one-character kind ('d', 'f', 'o'); 0 means absent. */
typedef struct tar_name_map {
  char **keys;
  char *kinds;
  size_t cap, count; /* cap is 0 or a power of two */
} tar_name_map;

char tar_map_get(const tar_name_map *m, const char *key);
/* Returns 0, or -1 when out of memory. */
int tar_map_put(tar_name_map *m, const char *key, char kind);
void tar_map_free(tar_name_map *m);

/* The header checksum: the unsigned byte sum with the checksum field read
 * as spaces; the signed sum (old tars) into *signed_sum when not NULL. */
unsigned long tar_header_sum(const unsigned char *h, long *signed_sum);

/* Normalises an archive name into out ("a/b"; "" for the destination
 * itself): drops a leading "./" and any empty or "." components. Returns
 * NULL, or why the name is refused ("absolute path", "'..' in path"). The
 * one rule of tar_extract and tar_check. */
const char *tar_normalize_name(const char *name, buf *out);
/* Removes the strip prefix (NULL: none) from a normalised name: "output/a"
 * -> "a"; "output" -> "" when it is a directory (type '5'), unchanged
 * otherwise. */
void tar_strip(const char *strip, buf *rel, char type);

/* Formats a message into err (when err is not NULL); returns -1, for
 * `return tar_set_error(err, errlen, ...)`. */
int tar_set_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif

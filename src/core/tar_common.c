/* tar_common: the pieces the tar writer, reader and extractor share (see
 * tar_internal.h): the zero block, a growing array, the name set, the
 * header checksum, the naming rules of extraction. */
#include "tar_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char tar_zero_block[BLOCK];

void *tar_grow_array(void *items, size_t *cap, size_t count, size_t size) {
  if (count < *cap) return items;
  size_t n = *cap ? *cap * 2 : 16;
  void *bigger = realloc(items, n * size);
  if (bigger) *cap = n;
  return bigger;
}

/* ---- the name set: open addressing, FNV-1a ---- */

static size_t hash_name(const char *s) {
  size_t h = 1469598103934665603ULL & (size_t)-1;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static size_t map_slot(char **keys, size_t cap, const char *key) {
  size_t i = hash_name(key) & (cap - 1);
  while (keys[i] && strcmp(keys[i], key) != 0) i = (i + 1) & (cap - 1);
  return i;
}

char tar_map_get(const tar_name_map *m, const char *key) {
  if (m->cap == 0) return 0;
  size_t i = map_slot(m->keys, m->cap, key);
  return m->keys[i] ? m->kinds[i] : 0;
}

static int map_grow(tar_name_map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  char **keys = calloc(cap, sizeof *keys);
  char *kinds = calloc(cap, 1);
  if (!keys || !kinds) {
    free(keys);
    free(kinds);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = map_slot(keys, cap, m->keys[i]);
    keys[j] = m->keys[i];
    kinds[j] = m->kinds[i];
  }
  free(m->keys);
  free(m->kinds);
  m->keys = keys;
  m->kinds = kinds;
  m->cap = cap;
  return 0;
}

int tar_map_put(tar_name_map *m, const char *key, char kind) {
  if ((m->count + 1) * 4 > m->cap * 3 && map_grow(m) != 0) return -1;
  size_t i = map_slot(m->keys, m->cap, key);
  if (!m->keys[i]) {
    if (!(m->keys[i] = strdup(key))) return -1;
    m->count++;
  }
  m->kinds[i] = kind;
  return 0;
}

void tar_map_free(tar_name_map *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys);
  free(m->kinds);
  memset(m, 0, sizeof *m);
}

unsigned long tar_header_sum(const unsigned char *h, long *signed_sum) {
  unsigned long sum = 0;
  long ssum = 0;
  for (size_t i = 0; i < BLOCK; i++) {
    unsigned char c = i >= H_CHKSUM && i < H_CHKSUM + 8 ? ' ' : h[i];
    sum += c;
    ssum += (signed char)c;
  }
  if (signed_sum) *signed_sum = ssum;
  return sum;
}

int tar_set_error(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ---- names: the rules every extraction applies ---- */

const char *tar_normalize_name(const char *name, buf *out) {
  buf_clear(out);
  if (buf_append(out, "", 0) != 0) return "out of memory";
  if (name[0] == '/') return "absolute path";
  for (const char *p = name; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.') return "'..' in path";
    if (len > 0 && !(len == 1 && p[0] == '.')) {
      if (out->len && buf_append_char(out, '/') != 0) return "out of memory";
      if (buf_append(out, p, len) != 0) return "out of memory";
    }
    p += len;
    if (*p == '/') p++;
  }
  return NULL;
}

void tar_strip(const char *strip, buf *rel, char type) {
  if (!strip) return;
  size_t len = strlen(strip);
  if (strcmp(rel->data, strip) == 0) {
    if (type == '5') buf_clear(rel);
  } else if (strncmp(rel->data, strip, len) == 0 && rel->data[len] == '/') {
    buf_consume(rel, len + 1);
  }
}

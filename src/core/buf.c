/* buf: growable byte buffer (see buf.h). */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int buf_reserve(buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < b->len + extra + 1) {
    if (cap > ((size_t)-1) / 2) return -1;
    cap *= 2;
  }
  char *data = realloc(b->data, cap);
  if (!data) return -1;
  b->data = data;
  b->cap = cap;
  return 0;
}

int buf_append(buf *b, const void *data, size_t len) {
  if (buf_reserve(b, len) != 0) return -1;
  if (len) memcpy(b->data + b->len, data, len);
  b->len += len;
  b->data[b->len] = '\0';
  return 0;
}

int buf_append_str(buf *b, const char *s) { return buf_append(b, s, strlen(s)); }

int buf_append_char(buf *b, char c) { return buf_append(b, &c, 1); }

int buf_vprintf(buf *b, const char *fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(NULL, 0, fmt, copy);
  va_end(copy);
  if (n < 0 || buf_reserve(b, (size_t)n) != 0) return -1;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int buf_printf(buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

void buf_consume(buf *b, size_t n) {
  if (n == 0) return; /* no copy: a reader consuming nothing per chunk of a big request would copy it all each time */
  if (n >= b->len) {
    buf_clear(b);
    return;
  }
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  b->data[b->len] = '\0';
}

void buf_clear(buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

void buf_free(buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

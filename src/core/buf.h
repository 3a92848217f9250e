/* buf: a growable byte buffer. The one place that owns realloc growth rules;
 * every core that collects bytes (http bodies, json text, tar headers) uses it. */
#ifndef LUAGENT_BUF_H
#define LUAGENT_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct buf {
  char *data;   /* always NUL-terminated when non-NULL */
  size_t len;
  size_t cap;
} buf;

#define BUF_INIT {NULL, 0, 0}

/* Makes room for `extra` more bytes. Returns 0, or -1 when out of memory. */
int buf_reserve(buf *b, size_t extra);
int buf_append(buf *b, const void *data, size_t len);
int buf_append_str(buf *b, const char *s);
int buf_append_char(buf *b, char c);
int buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf *b, const char *fmt, va_list ap);
/* Drops the first n bytes (used by stream parsers that consume from the front). */
void buf_consume(buf *b, size_t n);
void buf_clear(buf *b);
void buf_free(buf *b);

#endif

/* http_body: where an HTTP/1.x message body ends, read as it streams in
 * (RFC 9112 6 and 7.1): Content-Length bytes, chunked (sizes, extensions and
 * trailers checked and taken off), or until the connection closes. A proxy
 * that forwards exactly one request decodes its body here and frames it again
 * itself, so bytes past the body are never sent on. Pure C, no I/O.
 *
 *   http_body_init(&b, kind, length)      kind: enum http_body_kind (http_head.h)
 *   n = http_body_feed(&b, data, len, &payload)   -> bytes of data that belong to the
 *       body (the rest is past it), the payload appended decoded; -1 malformed (b.why)
 *   http_body_done(&b)                    the whole body has been read
 *   http_chunk(&out, data, len)           one chunk, framed; len 0: the last chunk */
#ifndef LUAGENT_HTTP_BODY_H
#define LUAGENT_HTTP_BODY_H

#include <stddef.h>

#include "buf.h"

typedef struct http_body {
  int kind;                /* enum http_body_kind */
  int state;               /* where in the chunked grammar */
  unsigned long long left; /* bytes left: of the body (length) or of this chunk (chunked) */
  size_t line;             /* bytes of the current size, extension or trailer line */
  size_t trailers;         /* bytes of trailer section so far */
  unsigned long long size_digits;
  int done;
  const char *why;         /* why the body is malformed */
} http_body;

void http_body_init(http_body *b, int kind, unsigned long long length);
long http_body_feed(http_body *b, const char *data, size_t n, buf *payload);
int http_body_done(const http_body *b);
void http_chunk(buf *out, const char *data, size_t n);

#endif

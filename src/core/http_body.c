/* http_body: a body's end, as it streams (http_body.h). The chunked grammar
 * (RFC 9112 7.1) as a state machine over single bytes, with every line held to
 * a cap, so no input can make it buffer or loop:
 *   chunk-size [ chunk-ext ] CRLF chunk-data CRLF ... "0" [ chunk-ext ] CRLF trailer-section CRLF */
#include "http_body.h"

#include "http_head.h"

#define LINE_MAX 4096         /* a chunk-size line with its extensions */
#define TRAILERS_MAX 16384    /* the whole trailer section */
#define SIZE_DIGITS_MAX 15    /* a chunk below 16^15 bytes */

enum chunk_state {
  SIZE,         /* hex digits of the size */
  EXTENSION,    /* after ';' up to CR */
  SIZE_LF,      /* after the size line's CR */
  DATA,         /* chunk-data, `left` bytes */
  DATA_CR,      /* the CR after chunk-data */
  DATA_LF,
  TRAILER,      /* a trailer line (or the final empty line) */
  TRAILER_LF,
};

void http_body_init(http_body *b, int kind, unsigned long long length) {
  *b = (http_body){0};
  b->kind = kind;
  b->left = length;
  b->state = SIZE;
  b->done = kind == HTTP_BODY_NONE || (kind == HTTP_BODY_LENGTH && length == 0);
}

int http_body_done(const http_body *b) { return b->done; }

static long malformed(http_body *b, const char *why) {
  b->why = why;
  return -1;
}

static int hex_value(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* One byte of the chunked framing (not of chunk-data). 0, or -1. */
static int chunk_byte(http_body *b, unsigned char c) {
  switch (b->state) {
  case SIZE: {
    int v = hex_value(c);
    if (v >= 0) {
      if (++b->size_digits > SIZE_DIGITS_MAX) return (int)malformed(b, "a chunk size of more than 15 hex digits");
      b->left = b->left * 16 + (unsigned long long)v;
      return 0;
    }
    if (b->size_digits == 0) return (int)malformed(b, "a chunk size that is not hex");
    if (c == ';') return b->state = EXTENSION, 0;
    if (c == '\r') return b->state = SIZE_LF, 0;
    return (int)malformed(b, "a chunk size that is not hex");
  }
  case EXTENSION:
    if (++b->line > LINE_MAX) return (int)malformed(b, "a chunk extension longer than 4 KiB");
    if (c == '\r') return b->state = SIZE_LF, 0;
    if (c == '\n' || c == 0) return (int)malformed(b, "a control byte in a chunk extension");
    return 0;
  case SIZE_LF:
    if (c != '\n') return (int)malformed(b, "a chunk size line that does not end in CRLF");
    b->line = 0, b->size_digits = 0;
    b->state = b->left ? DATA : TRAILER;
    return 0;
  case DATA_CR:
    if (c != '\r') return (int)malformed(b, "chunk data longer than its size");
    return b->state = DATA_LF, 0;
  case DATA_LF:
    if (c != '\n') return (int)malformed(b, "chunk data longer than its size");
    b->left = 0;
    return b->state = SIZE, 0;
  case TRAILER:
    if (++b->trailers > TRAILERS_MAX) return (int)malformed(b, "trailers longer than 16 KiB");
    if (c == '\r') return b->state = TRAILER_LF, 0;
    if (c == '\n' || c == 0) return (int)malformed(b, "a trailer line that does not end in CRLF");
    b->line++;
    return 0;
  case TRAILER_LF:
    if (c != '\n') return (int)malformed(b, "a trailer line that does not end in CRLF");
    if (b->line == 0) b->done = 1; /* the empty line: the end */
    b->line = 0;
    b->state = TRAILER;
    return 0;
  }
  return (int)malformed(b, "a chunked body in an unknown state");
}

static long feed_chunked(http_body *b, const char *data, size_t n, buf *payload) {
  size_t i = 0;
  while (i < n && !b->done) {
    if (b->state == DATA) {
      size_t take = (unsigned long long)(n - i) < b->left ? n - i : (size_t)b->left;
      if (payload) buf_append(payload, data + i, take);
      b->left -= take, i += take;
      if (b->left == 0) b->state = DATA_CR;
      continue;
    }
    if (chunk_byte(b, (unsigned char)data[i++]) < 0) return -1;
  }
  return (long)i;
}

long http_body_feed(http_body *b, const char *data, size_t n, buf *payload) {
  if (b->done) return 0;
  switch (b->kind) {
  case HTTP_BODY_CLOSE:
    if (payload) buf_append(payload, data, n);
    return (long)n;
  case HTTP_BODY_LENGTH: {
    size_t take = (unsigned long long)n < b->left ? n : (size_t)b->left;
    if (payload) buf_append(payload, data, take);
    b->left -= take;
    if (b->left == 0) b->done = 1;
    return (long)take;
  }
  case HTTP_BODY_CHUNKED:
    return feed_chunked(b, data, n, payload);
  default:
    return 0;
  }
}

void http_chunk(buf *out, const char *data, size_t n) {
  buf_printf(out, "%zx\r\n", n);
  if (n) buf_append(out, data, n);
  buf_append_str(out, "\r\n");
}

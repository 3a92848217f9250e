/* egress_frames: the egress wire format, encoder and streaming parser (see egress_frames.h). */
#include "egress_frames.h"

#include <stdio.h>
#include <string.h>

static int valid_kind(char kind) { return kind >= 'A' && kind <= 'Z'; }

int eg_header(char *out, char kind, long long conn, size_t n) {
  if (!valid_kind(kind) || conn < 0 || conn > EG_MAX_CONN || n > EG_MAX_PAYLOAD) return -1;
  return snprintf(out, EG_MAX_HEADER + 2, "%c %lld %zu\n", kind, conn, n);
}

int eg_encode(buf *out, char kind, long long conn, const void *data, size_t n) {
  char head[EG_MAX_HEADER + 2];
  int len = eg_header(head, kind, conn, n);
  size_t body = kind == 'K' ? 0 : n;
  if (len < 0 || (body && !data) || buf_reserve(out, (size_t)len + body) != 0) return -1;
  buf_append(out, head, (size_t)len);
  if (body) buf_append(out, data, body);
  return 0;
}

void eg_parser_init(eg_parser *p) { memset(p, 0, sizeof *p); }

void eg_parser_free(eg_parser *p) { buf_free(&p->payload); }

size_t eg_parser_pending(const eg_parser *p) { return p->in_payload ? p->payload.len + 1 : p->header_len; }

static int fail(eg_parser *p, const char *why) {
  if (!p->error[0]) snprintf(p->error, sizeof p->error, "%s", why);
  return -1;
}

/* A decimal 0..max at *s ("0" or no leading zero), up to the byte `end`;
 * advances *s past it. -1 when it is not one. */
static long long decimal(const char **s, char end, long long max) {
  const char *c = *s;
  long long v = 0;
  if (*c == '0' && c[1] != end) return -1;
  for (; *c >= '0' && *c <= '9'; c++) {
    v = v * 10 + (*c - '0');
    if (v > max) return -1;
  }
  if (c == *s || *c != end) return -1;
  *s = c;
  return v;
}

/* Parses the header collected (NUL-terminated, without its LF) into p. */
static int parse_header(eg_parser *p) {
  const char *s = p->header;
  if (!valid_kind(s[0])) return fail(p, "the message kind is not a letter A-Z");
  if (s[1] != ' ') return fail(p, "no blank after the message kind");
  s += 2;
  long long conn = decimal(&s, ' ', EG_MAX_CONN);
  if (conn < 0) return fail(p, "the connection is not a decimal 0..2147483647 without leading zero");
  s++;
  long long n = decimal(&s, '\0', EG_MAX_PAYLOAD);
  if (n < 0) return fail(p, "the length is not a decimal 0..1048576 without leading zero");
  p->kind = p->header[0], p->conn = conn, p->need = (size_t)n;
  return 0;
}

static int deliver(eg_parser *p, const char *data, size_t n, eg_on_msg on_msg, void *ctx) {
  p->in_payload = 0;
  p->header_len = 0;
  int rc = on_msg(ctx, p->kind, p->conn, data, n);
  buf_clear(&p->payload);
  return rc ? fail(p, "stopped by the receiver") : 0;
}

/* Takes header bytes from data; returns how many were used, or -1. */
static long long take_header(eg_parser *p, const char *data, size_t n, eg_on_msg on_msg, void *ctx) {
  size_t room = EG_MAX_HEADER - p->header_len;
  size_t look = n < room + 1 ? n : room + 1;
  const char *lf = memchr(data, '\n', look);
  size_t take = lf ? (size_t)(lf - data) : look;
  if (take > room) return fail(p, "a header longer than 32 bytes (or no LF after it)");
  for (size_t i = 0; i < take; i++)
    if (p->header_len + i >= 2 && data[i] != ' ' && (data[i] < '0' || data[i] > '9'))
      return fail(p, "a header byte that is not a digit, a blank or LF (no LF after the header?)");
  memcpy(p->header + p->header_len, data, take);
  p->header_len += take;
  if (!lf) return (long long)take;
  p->header[p->header_len] = '\0';
  if (parse_header(p) != 0) return -1;
  p->in_payload = 1;
  if (p->kind == 'K') return deliver(p, NULL, p->need, on_msg, ctx) ? -1 : (long long)take + 1;
  if (p->need == 0) return deliver(p, "", 0, on_msg, ctx) ? -1 : (long long)take + 1;
  return (long long)take + 1;
}

/* Takes payload bytes; a payload that lies whole in data is delivered from there. */
static long long take_payload(eg_parser *p, const char *data, size_t n, eg_on_msg on_msg, void *ctx) {
  if (p->payload.len == 0 && n >= p->need) {
    size_t need = p->need;
    return deliver(p, data, need, on_msg, ctx) ? -1 : (long long)need;
  }
  size_t take = p->need - p->payload.len < n ? p->need - p->payload.len : n;
  if (buf_append(&p->payload, data, take) != 0) return fail(p, "out of memory");
  if (p->payload.len == p->need && deliver(p, p->payload.data, p->need, on_msg, ctx) != 0) return -1;
  return (long long)take;
}

int eg_feed(eg_parser *p, const char *data, size_t n, eg_on_msg on_msg, void *ctx) {
  if (p->error[0]) return -1;
  while (n > 0) {
    long long used = p->in_payload ? take_payload(p, data, n, on_msg, ctx) : take_header(p, data, n, on_msg, ctx);
    if (used < 0) return -1;
    data += used, n -= (size_t)used;
  }
  return 0;
}

/* websocket: RFC 6455, the client side (see websocket.h). */
#include "websocket.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "sha1.h"

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* ---- the opening handshake ---- */

/* Standard base64 with padding; out has room for (n + 2) / 3 * 4 + 1. */
static void base64(const unsigned char *in, size_t n, char *out) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    size_t more = n - i;
    unsigned v = (unsigned)in[i] << 16 | (more > 1 ? (unsigned)in[i + 1] << 8 : 0u) | (more > 2 ? in[i + 2] : 0u);
    const char quad[4] = {alphabet[v >> 18 & 63], alphabet[v >> 12 & 63], more > 1 ? alphabet[v >> 6 & 63] : '=',
                          more > 2 ? alphabet[v & 63] : '='};
    memcpy(out + o, quad, 4);
    o += 4;
  }
  out[o] = '\0';
}

int ws_random(unsigned char *out, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = getrandom(out + got, n - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

int ws_make_key(char key[WS_KEY_LEN + 1]) {
  unsigned char nonce[16];
  if (ws_random(nonce, sizeof nonce) != 0) return -1;
  base64(nonce, sizeof nonce, key);
  return 0;
}

void ws_accept(const char *key, char accept[WS_ACCEPT_LEN + 1]) {
  char joined[128];
  int n = snprintf(joined, sizeof joined, "%s%s", key, WS_GUID);
  unsigned char digest[SHA1_DIGEST_LEN];
  sha1(joined, n < (int)sizeof joined ? (size_t)n : sizeof joined - 1, digest);
  base64(digest, sizeof digest, accept);
}

/* "Name: value" with a token name and no line break. */
static int good_header_line(const char *line) {
  const char *colon = strchr(line, ':');
  return colon && http_is_token(line, (size_t)(colon - line)) && !strpbrk(colon, "\r\n");
}

int ws_request(buf *out, const char *host, size_t host_len, const char *path, const char *key, const char *protocols,
               const char *const *headers) {
  if (strpbrk(path, " \r\n") || memchr(host, '\r', host_len) || memchr(host, '\n', host_len) ||
      memchr(host, ' ', host_len) || (protocols && strpbrk(protocols, "\r\n")))
    return -1;
  for (const char *const *h = headers; h && *h; h++)
    if (!good_header_line(*h)) return -1;
  int rc = buf_printf(out,
                      "GET %s HTTP/1.1\r\nHost: %.*s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n",
                      path, (int)host_len, host, key);
  if (protocols) rc |= buf_printf(out, "Sec-WebSocket-Protocol: %s\r\n", protocols);
  for (const char *const *h = headers; h && *h; h++) rc |= buf_printf(out, "%s\r\n", *h);
  rc |= buf_append_str(out, "\r\n");
  return rc ? -1 : 0;
}

/* Does the comma-separated list hold token (case-insensitive, spaces around
 * items allowed)? */
static int list_has(const char *list, size_t len, const char *token) {
  size_t want = strlen(token);
  const char *p = list, *end = list + len;
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *item_end = comma ? comma : end;
    while (p < item_end && (*p == ' ' || *p == '\t')) p++;
    const char *e = item_end;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
    if ((size_t)(e - p) == want && strncasecmp(p, token, want) == 0) return 1;
    p = comma ? comma + 1 : end;
  }
  return 0;
}

/* Does any field named name hold token? */
static int fields_have(const http_message *m, const char *name, const char *token) {
  for (size_t i = 0; i < m->nfields; i++) {
    const http_field *f = &m->fields[i];
    if (strcasecmp(f->name, name) == 0 && list_has(f->value, f->value_len, token)) return 1;
  }
  return 0;
}

static int refuse(const char **why, const char *what) {
  *why = what;
  return -1;
}

int ws_check_upgrade(const http_message *m, const char *key, const char *offered, char *protocol,
                     size_t protocol_len, const char **why) {
  protocol[0] = '\0';
  if (m->status != 101) return refuse(why, "the answer is not 101 Switching Protocols");
  if (!fields_have(m, "upgrade", "websocket")) return refuse(why, "the answer does not upgrade to websocket");
  if (!fields_have(m, "connection", "upgrade")) return refuse(why, "the answer's Connection is not Upgrade");
  int count;
  const char *accept = http_field_value(m, "sec-websocket-accept", &count);
  char expected[WS_ACCEPT_LEN + 1];
  ws_accept(key, expected);
  if (count != 1 || strcmp(accept, expected) != 0)
    return refuse(why, "the answer's Sec-WebSocket-Accept is not the one for our key");
  if (http_field_value(m, "sec-websocket-extensions", NULL))
    return refuse(why, "the answer chose a WebSocket extension, and none was offered");
  const char *chosen = http_field_value(m, "sec-websocket-protocol", &count);
  if (!chosen) return 0;
  size_t n = strlen(chosen);
  if (count != 1 || n == 0 || n >= protocol_len || !http_is_token(chosen, n) || !offered ||
      !list_has(offered, strlen(offered), chosen))
    return refuse(why, "the answer chose a subprotocol that was not offered");
  memcpy(protocol, chosen, n + 1);
  return 0;
}

/* ---- client frames ---- */

int ws_frame_header(buf *out, int opcode, int fin, unsigned long long n, const unsigned char mask[4]) {
  unsigned char h[WS_FRAME_HEADER_MAX];
  size_t len = 2;
  h[0] = (unsigned char)((fin ? 0x80 : 0) | (opcode & 0x0f));
  if (n < 126) {
    h[1] = (unsigned char)(0x80 | n);
  } else if (n <= 0xffff) {
    h[1] = 0x80 | 126;
    h[2] = (unsigned char)(n >> 8), h[3] = (unsigned char)n;
    len = 4;
  } else {
    h[1] = 0x80 | 127;
    for (int i = 0; i < 8; i++) h[2 + i] = (unsigned char)(n >> (56 - 8 * i));
    len = 10;
  }
  memcpy(h + len, mask, 4);
  return buf_append(out, h, len + 4);
}

int ws_mask_append(buf *out, const void *data, size_t n, const unsigned char mask[4], unsigned long long offset) {
  if (buf_reserve(out, n) != 0) return -1;
  const unsigned char *in = data;
  unsigned char *dst = (unsigned char *)out->data + out->len;
  unsigned char key[8];
  for (int i = 0; i < 8; i++) key[i] = mask[(offset + (unsigned)i) % 4];
  uint64_t wide;
  memcpy(&wide, key, 8);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) { /* eight bytes at a time: the key repeats every 4, so every 8 too */
    uint64_t v;
    memcpy(&v, in + i, 8);
    v ^= wide;
    memcpy(dst + i, &v, 8);
  }
  for (; i < n; i++) dst[i] = in[i] ^ key[i % 8];
  out->len += n;
  out->data[out->len] = '\0';
  return 0;
}

int ws_frame(buf *out, int opcode, int fin, const void *data, size_t n) {
  unsigned char mask[4];
  if (ws_random(mask, sizeof mask) != 0) return -1;
  if (ws_frame_header(out, opcode, fin, n, mask) != 0) return -1;
  return ws_mask_append(out, data, n, mask, 0);
}

/* ---- the server's frames ---- */

enum { HEADER, PAYLOAD, CONTROL, CLOSED };

void ws_decoder_init(ws_decoder *d) {
  memset(d, 0, sizeof *d);
  d->state = HEADER;
  d->header_need = 2;
}

static int broken(ws_decoder *d, const char *why) {
  snprintf(d->why, sizeof d->why, "%s", why);
  return -1;
}

static int is_control(int opcode) { return opcode >= 8; }

/* The first two bytes: what the frame is, and how long its header. */
static int check_start(ws_decoder *d) {
  unsigned char b0 = d->header[0], b1 = d->header[1];
  d->fin = b0 >> 7;
  d->opcode = b0 & 0x0f;
  if (b0 & 0x70) return broken(d, "a frame with reserved bits set (no extension was agreed)");
  if (b1 & 0x80) return broken(d, "a masked frame from the server");
  int op = d->opcode;
  if (op != WS_CONTINUATION && op != WS_TEXT && op != WS_BINARY && op != WS_CLOSE && op != WS_PING && op != WS_PONG)
    return broken(d, "a frame with an unknown opcode");
  unsigned len7 = b1 & 0x7f;
  if (is_control(op) && (!d->fin || len7 > WS_CONTROL_MAX))
    return broken(d, d->fin ? "a control frame longer than 125 bytes" : "a fragmented control frame");
  if (op == WS_CONTINUATION && !d->in_message) return broken(d, "a continuation frame with no message to continue");
  if ((op == WS_TEXT || op == WS_BINARY) && d->in_message)
    return broken(d, "a new message before the last one ended");
  d->header_need = len7 == 126 ? 4 : len7 == 127 ? 10 : 2;
  return 0;
}

/* The whole header is there: the payload's length, and what comes next. */
static int header_done(ws_decoder *d, const ws_events *ev, void *ctx) {
  unsigned len7 = d->header[1] & 0x7f;
  unsigned long long n = len7;
  if (len7 == 126) n = (unsigned long long)d->header[2] << 8 | d->header[3];
  if (len7 == 127) {
    if (d->header[2] & 0x80) return broken(d, "a frame longer than 2^63 bytes");
    n = 0;
    for (int i = 0; i < 8; i++) n = n << 8 | d->header[2 + i];
  }
  d->left = n;
  d->header_len = 0;
  d->header_need = 2;
  if (is_control(d->opcode)) {
    if (d->opcode == WS_CLOSE && n == 1) return broken(d, "a close frame with a one-byte payload");
    d->control_len = 0;
    d->state = CONTROL;
    return 0;
  }
  d->state = PAYLOAD;
  if (d->opcode != WS_CONTINUATION) {
    d->in_message = 1;
    if (ev->start(ctx, d->opcode) != 0) return 1;
  }
  return 0;
}

/* The frame's payload has all come. */
static int frame_done(ws_decoder *d, const ws_events *ev, void *ctx) {
  d->state = HEADER;
  if (d->opcode == WS_CLOSE) d->state = CLOSED;
  if (is_control(d->opcode)) return ev->control(ctx, d->opcode, d->control, d->control_len) ? 1 : 0;
  if (!d->fin) return 0;
  d->in_message = 0;
  return ev->end(ctx) ? 1 : 0;
}

/* Takes header bytes from *p; 1 when the header is whole. */
static int take_header(ws_decoder *d, const unsigned char **p, const unsigned char *end) {
  while (*p < end && d->header_len < d->header_need) {
    d->header[d->header_len++] = *(*p)++;
    if (d->header_len == 2 && check_start(d) != 0) return -1;
  }
  return d->header_len == d->header_need;
}

int ws_decode(ws_decoder *d, const char *data, size_t n, const ws_events *ev, void *ctx) {
  const unsigned char *p = (const unsigned char *)data, *end = p + n;
  for (;;) {
    int rc = 0;
    if (d->state == CLOSED) return p < end ? broken(d, "bytes after the close frame") : 0;
    if (d->state == HEADER) {
      int whole = take_header(d, &p, end);
      if (whole <= 0) return whole;
      rc = header_done(d, ev, ctx);
    } else {
      size_t take = (size_t)(end - p) < d->left ? (size_t)(end - p) : (size_t)d->left;
      if (d->state == CONTROL) {
        memcpy(d->control + d->control_len, p, take);
        d->control_len += take;
      } else if (take && ev->payload(ctx, (const char *)p, take) != 0) {
        return 1;
      }
      p += take;
      d->left -= take;
    }
    if (rc) return rc;
    if (d->state != HEADER && d->state != CLOSED && d->left == 0 && (rc = frame_done(d, ev, ctx)) != 0) return rc;
    if (p == end && d->state != CLOSED) return 0;
  }
}

int ws_close_parse(const char *data, size_t n, int *code, const char **reason, size_t *reason_len) {
  if (n == 1) return -1;
  const unsigned char *u = (const unsigned char *)data;
  *code = n == 0 ? 1005 : u[0] << 8 | u[1];
  *reason = n > 2 ? data + 2 : "";
  *reason_len = n > 2 ? n - 2 : 0;
  return 0;
}

/* websocket and kube_exec: the handshake (RFC 6455's own example, the
 * request, the checks of the answer), client frames (lengths, masking),
 * the streaming decoder (messages in pieces, control frames between
 * fragments, a 10 MB message that is never held whole, every refusal, and a
 * little fuzzing: any cuts of a valid stream decode the same, random bytes
 * never crash), then the Kubernetes channels on top (stdout, stderr, the
 * Status, ping, close, stdin in messages) and a refused upgrade's body. */
#include "../../src/core/http_body.h"
#include "../../src/core/kube_exec.h"
#include "../../src/core/websocket.h"

#include <stdint.h>
#include <stdlib.h>

#include "test.h"

/* ---- helpers: a server's frames, and reading a client's ---- */

/* Appends an unmasked frame as a server sends it. */
static void server_frame(buf *out, int first_byte, const void *data, size_t n) {
  unsigned char h[10] = {(unsigned char)first_byte};
  size_t len = 2;
  if (n < 126) {
    h[1] = (unsigned char)n;
  } else if (n <= 0xffff) {
    h[1] = 126, h[2] = (unsigned char)(n >> 8), h[3] = (unsigned char)n, len = 4;
  } else {
    h[1] = 127, len = 10;
    for (int i = 0; i < 8; i++) h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
  }
  buf_append(out, h, len);
  buf_append(out, data, n);
}

/* Reads the client frame at *p: its opcode, and its payload unmasked into
 * payload. 0, or -1 when it is not a masked final frame. */
static int client_frame(const unsigned char **p, int *opcode, buf *payload) {
  const unsigned char *f = *p;
  if (!(f[0] & 0x80) || !(f[1] & 0x80)) return -1;
  *opcode = f[0] & 0x0f;
  uint64_t n = f[1] & 0x7f;
  size_t at = 2;
  if (n == 126) n = (uint64_t)f[2] << 8 | f[3], at = 4;
  if (n == 127) {
    n = 0;
    for (int i = 0; i < 8; i++) n = n << 8 | f[2 + i];
    at = 10;
  }
  const unsigned char *mask = f + at;
  buf_clear(payload);
  buf_reserve(payload, n);
  for (uint64_t i = 0; i < n; i++) payload->data[i] = (char)(f[at + 4 + i] ^ mask[i % 4]);
  payload->len = n;
  payload->data[n] = '\0';
  *p = f + at + 4 + n;
  return 0;
}

/* What a decoder reported, as text: "<2>" a binary message starts, the
 * payload as it is, "</>" it ends, "{9:...}" a control frame. */
typedef struct record {
  buf text;
  size_t largest_piece, payload_bytes;
  int keep_payload;
} record;

static int rec_start(void *ctx, int opcode) { return buf_printf(&((record *)ctx)->text, "<%d>", opcode); }
static int rec_payload(void *ctx, const char *data, size_t n) {
  record *r = ctx;
  if (n > r->largest_piece) r->largest_piece = n;
  r->payload_bytes += n;
  return r->keep_payload ? buf_append(&r->text, data, n) : 0;
}
static int rec_end(void *ctx) { return buf_append_str(&((record *)ctx)->text, "</>"); }
static int rec_control(void *ctx, int opcode, const char *data, size_t n) {
  return buf_printf(&((record *)ctx)->text, "{%d:%.*s}", opcode, (int)n, data);
}
static const ws_events RECORD = {rec_start, rec_payload, rec_end, rec_control};

/* Decodes the stream cut every `step` bytes (0: at random places). */
static int decode(const buf *stream, size_t step, record *r, ws_decoder *d) {
  ws_decoder_init(d);
  int rc = 0;
  for (size_t at = 0; at < stream->len && rc == 0;) {
    size_t n = step ? step : 1 + (size_t)rand() % 40;
    if (n > stream->len - at) n = stream->len - at;
    rc = ws_decode(d, stream->data + at, n, &RECORD, r);
    at += n;
  }
  return rc;
}

/* ---- the handshake ---- */

static void the_accept_of_rfc_6455(void) {
  char accept[WS_ACCEPT_LEN + 1];
  ws_accept("dGhlIHNhbXBsZSBub25jZQ==", accept);
  CHECK_STR(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  char a[WS_KEY_LEN + 1], b[WS_KEY_LEN + 1];
  CHECK(ws_make_key(a) == 0 && ws_make_key(b) == 0);
  CHECK(strlen(a) == 24 && a[22] == '=' && a[23] == '=' && strcmp(a, b) != 0);
}

static void the_request(void) {
  buf b = BUF_INIT;
  const char *headers[] = {"Authorization: Bearer abc", NULL};
  CHECK(ws_request(&b, "10.0.0.1:6443", 13, "/api/v1/x/exec?command=a", "KEY", "v5.channel.k8s.io, v4", headers) ==
        0);
  CHECK_STR(b.data, "GET /api/v1/x/exec?command=a HTTP/1.1\r\nHost: 10.0.0.1:6443\r\nUpgrade: websocket\r\n"
                    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: KEY\r\n"
                    "Sec-WebSocket-Protocol: v5.channel.k8s.io, v4\r\nAuthorization: Bearer abc\r\n\r\n");
  const char *evil[] = {"X-A: 1\r\nEvil: 2", NULL}, *nameless[] = {": v", NULL}, *spaced[] = {"A B: v", NULL};
  CHECK(ws_request(&b, "h", 1, "/x", "K", NULL, evil) == -1);
  CHECK(ws_request(&b, "h", 1, "/x", "K", NULL, nameless) == -1);
  CHECK(ws_request(&b, "h", 1, "/x", "K", NULL, spaced) == -1);
  CHECK(ws_request(&b, "h", 1, "/x HTTP/1.1\r\nEvil: 1", "K", NULL, NULL) == -1);
  CHECK(ws_request(&b, "h\r\n", 3, "/x", "K", NULL, NULL) == -1);
  buf_free(&b);
}

/* Parses head and checks it as the answer to the RFC's example key. */
static int check_answer(const char *head, char *protocol, const char **why) {
  http_message m;
  const char *parse_why;
  if (http_response_parse(head, strlen(head), "GET", &m, &parse_why) != 0) {
    http_message_free(&m);
    *why = parse_why;
    return -2;
  }
  int rc = ws_check_upgrade(&m, "dGhlIHNhbXBsZSBub25jZQ==", KUBE_EXEC_PROTOCOLS, protocol, 64, why);
  http_message_free(&m);
  return rc;
}

static void the_answer(void) {
  char protocol[64];
  const char *why = "";
  CHECK(check_answer("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                     "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n",
                     protocol, &why) == 0);
  CHECK_STR(protocol, "v4.channel.k8s.io");
  CHECK(kube_exec_version(protocol) == 4 && kube_exec_version("v5.channel.k8s.io") == 5 &&
        kube_exec_version("channel.k8s.io") == 0);
  CHECK(check_answer("HTTP/1.1 101 OK\r\nupgrade: WebSocket\r\nconnection: keep-alive, UPGRADE\r\n"
                     "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
                     protocol, &why) == 0);
  CHECK_STR(protocol, ""); /* none chosen */
  static const char *const wrong[][2] = {
      {"HTTP/1.1 101 OK\r\nUpgrade: tcp\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
       "upgrade to websocket"},
      {"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: close\r\nSec-WebSocket-Accept: "
       "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
       "Connection"},
      {"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x", "Accept"},
      {"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade", "Accept"},
      {"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
       "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Protocol: v3.channel.k8s.io",
       "not offered"},
      {"HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
       "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: permessage-deflate",
       "extension"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 0", "101"}};
  for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
    char head[512];
    snprintf(head, sizeof head, "%s\r\n\r\n", wrong[i][0]);
    why = "";
    CHECK(check_answer(head, protocol, &why) == -1);
    CHECK(strstr(why, wrong[i][1]) != NULL);
  }
}

/* ---- client frames ---- */

static void client_frames_are_masked_with_minimal_lengths(void) {
  static const struct {
    size_t n, header;
  } sizes[] = {{0, 6}, {125, 6}, {126, 8}, {65535, 8}, {65536, 14}};
  char *data = malloc(65536);
  for (size_t i = 0; i < 65536; i++) data[i] = (char)(i * 31);
  buf b = BUF_INIT, payload = BUF_INIT;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    buf_clear(&b);
    CHECK(ws_frame(&b, WS_BINARY, 1, data, sizes[i].n) == 0);
    CHECK(b.len == sizes[i].header + sizes[i].n);
    const unsigned char *p = (const unsigned char *)b.data;
    int opcode;
    CHECK(client_frame(&p, &opcode, &payload) == 0);
    CHECK(opcode == WS_BINARY && payload.len == sizes[i].n && memcmp(payload.data, data, sizes[i].n) == 0);
  }
  /* a payload masked in pieces is the payload masked at once */
  unsigned char mask[4] = {1, 2, 3, 4};
  buf whole = BUF_INIT, pieces = BUF_INIT;
  ws_mask_append(&whole, data, 1000, mask, 0);
  for (size_t at = 0; at < 1000; at += 7) ws_mask_append(&pieces, data + at, at + 7 > 1000 ? 1000 - at : 7, mask, at);
  CHECK(whole.len == 1000 && pieces.len == 1000 && memcmp(whole.data, pieces.data, 1000) == 0);
  CHECK((unsigned char)whole.data[5] == ((unsigned char)data[5] ^ 2));
  buf_free(&whole);
  buf_free(&pieces);
  buf_free(&b);
  buf_free(&payload);
  free(data);
}

/* ---- the decoder ---- */

/* A stream with a bit of everything: an empty message, a message in three
 * fragments with a ping and a pong between them, a text message, a 70000-byte
 * one (64-bit length), a close. */
static void mixed_stream(buf *s, char *big, size_t big_len) {
  server_frame(s, 0x82, "", 0);
  server_frame(s, 0x02, "ab", 2);
  server_frame(s, 0x89, "p1", 2);
  server_frame(s, 0x00, "cd", 2);
  server_frame(s, 0x8a, "", 0);
  server_frame(s, 0x80, "e", 1);
  server_frame(s, 0x81, "txt", 3);
  server_frame(s, 0x82, big, big_len);
  server_frame(s, 0x88, "\x03\xe8" "bye", 5);
}

static void messages_in_any_cuts(void) {
  size_t big_len = 70000;
  char *big = malloc(big_len);
  memset(big, 'z', big_len);
  buf s = BUF_INIT, expected = BUF_INIT;
  mixed_stream(&s, big, big_len);
  buf_printf(&expected, "<2></><2>ab{9:p1}cd{10:}e</><1>txt</><2>%.*s</>{8:\x03\xe8" "bye}", (int)big_len, big);
  size_t steps[] = {s.len, 1, 2, 3, 7, 1000, 0, 0, 0, 0, 0};
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    record r = {BUF_INIT, 0, 0, 1};
    ws_decoder d;
    CHECK(decode(&s, steps[i], &r, &d) == 0);
    CHECK(r.text.len == expected.len && memcmp(r.text.data, expected.data, expected.len) == 0);
    buf_free(&r.text);
  }
  int code;
  const char *reason;
  size_t len;
  CHECK(ws_close_parse("\x03\xe8" "bye", 5, &code, &reason, &len) == 0 && code == 1000 && len == 3);
  CHECK(ws_close_parse("", 0, &code, &reason, &len) == 0 && code == 1005 && len == 0);
  CHECK(ws_close_parse("x", 1, &code, &reason, &len) == -1);
  buf_free(&s);
  buf_free(&expected);
  free(big);
}

/* 10 MB in one frame, fed 64 KiB at a time: it comes out in pieces no
 * larger than what was fed, never held whole. */
static void a_large_message_streams_through(void) {
  size_t n = 10u << 20;
  buf s = BUF_INIT;
  char *data = calloc(1, n);
  server_frame(&s, 0x82, data, n);
  record r = {BUF_INIT, 0, 0, 0};
  ws_decoder d;
  CHECK(decode(&s, 65536, &r, &d) == 0);
  CHECK(r.payload_bytes == n && r.largest_piece <= 65536);
  CHECK_STR(r.text.data, "<2></>");
  buf_free(&r.text);
  buf_free(&s);
  free(data);
}

static void what_the_decoder_refuses(void) {
  static const struct {
    const char *bytes;
    size_t n;
    const char *why;
  } cases[] = {
      {"\x82\x81mask", 6, "masked"},
      {"\xc2\x00", 2, "reserved bits"},
      {"\x83\x00", 2, "unknown opcode"},
      {"\x89\x7e\x00\x7e", 4, "longer than 125"},
      {"\x09\x00", 2, "fragmented control"},
      {"\x80\x00", 2, "no message to continue"},
      {"\x02\x00\x82\x00", 4, "before the last one ended"},
      {"\x82\x7f\x80\0\0\0\0\0\0\0", 10, "2^63"},
      {"\x88\x00\x82\x00", 4, "after the close"},
      {"\x88\x01x", 3, "one-byte"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    record r = {BUF_INIT, 0, 0, 1};
    ws_decoder d;
    buf s = {(char *)cases[i].bytes, cases[i].n, 0};
    CHECK(decode(&s, 1, &r, &d) == -1);
    CHECK(strstr(d.why, cases[i].why) != NULL);
    buf_free(&r.text);
  }
}

static void random_bytes_never_crash(void) {
  srand(6455);
  unsigned char junk[512];
  for (int round = 0; round < 3000; round++) {
    size_t n = (size_t)rand() % sizeof junk;
    for (size_t i = 0; i < n; i++) junk[i] = (unsigned char)rand();
    if (round % 2) junk[0] = 0x82, junk[1] = (unsigned char)(rand() % 126); /* some get past the first frame */
    record r = {BUF_INIT, 0, 0, 1};
    ws_decoder d;
    buf s = {(char *)junk, n, 0};
    int rc = decode(&s, 0, &r, &d);
    CHECK(rc == 0 || rc == -1);
    buf_free(&r.text);
  }
}

/* ---- the Kubernetes channels ---- */

typedef struct seen {
  buf out, err, replies;
} seen;

static int seen_output(void *ctx, int stream, const char *data, size_t n) {
  seen *s = ctx;
  return buf_append(stream == KUBE_STDOUT ? &s->out : &s->err, data, n);
}
static int seen_reply(void *ctx, const buf *frame) { return buf_append(&((seen *)ctx)->replies, frame->data, frame->len); }
static const kube_exec_events SEEN = {seen_output, seen_reply};

static void seen_free(seen *s) {
  buf_free(&s->out);
  buf_free(&s->err);
  buf_free(&s->replies);
}

static const char FAILURE[] = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero "
                              "exit code: error executing command [false], exit code 1\",\"reason\":"
                              "\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"1\"}]}}";

static void channels_status_ping_and_close(void) {
  buf s = BUF_INIT;
  server_frame(&s, 0x82, "\x01", 1); /* the server's first, empty, message */
  server_frame(&s, 0x82, "\x01hello ", 7);
  server_frame(&s, 0x02, "\x02warn", 5);
  server_frame(&s, 0x89, "are you there", 13);
  server_frame(&s, 0x80, "ing\n", 4); /* later fragments have no channel byte */
  server_frame(&s, 0x82, "\x01world", 6);
  char status[400] = "\x03";
  memcpy(status + 1, FAILURE, sizeof FAILURE - 1);
  server_frame(&s, 0x82, status, sizeof FAILURE);
  server_frame(&s, 0x88, "\x03\xe8", 2);
  for (size_t step = 1; step <= s.len; step = step * 3 + 1) {
    kube_exec k;
    kube_exec_init(&k, 4);
    seen got = {BUF_INIT, BUF_INIT, BUF_INIT};
    int rc = 0;
    for (size_t at = 0; at < s.len && rc == 0; at += step)
      rc = kube_exec_feed(&k, s.data + at, at + step > s.len ? s.len - at : step, &SEEN, &got);
    CHECK(rc == 2);
    CHECK_STR(got.out.data, "hello world");
    CHECK_STR(got.err.data, "warning\n");
    const unsigned char *p = (const unsigned char *)got.replies.data;
    buf payload = BUF_INIT;
    int opcode;
    CHECK(client_frame(&p, &opcode, &payload) == 0 && opcode == WS_PONG);
    CHECK_STR(payload.data, "are you there");
    CHECK(client_frame(&p, &opcode, &payload) == 0 && opcode == WS_CLOSE && payload.len == 2); /* 1000 echoed */
    char outcome[400];
    kube_exec_outcome(&k, outcome, sizeof outcome);
    CHECK_STR(outcome, "command terminated with non-zero exit code: error executing command [false], exit code 1");
    CHECK(kube_exec_feed(&k, "\x82", 1, &SEEN, &got) == 2); /* over */
    buf_free(&payload);
    seen_free(&got);
    kube_exec_free(&k);
  }
  buf_free(&s);
}

/* Feeds one stream into a v4 exec; returns the feed's result and the outcome. */
static int feed_all(const buf *s, char *outcome, size_t n, char *why, size_t whylen) {
  kube_exec k;
  kube_exec_init(&k, 4);
  seen got = {BUF_INIT, BUF_INIT, BUF_INIT};
  int rc = kube_exec_feed(&k, s->data, s->len, &SEEN, &got);
  kube_exec_outcome(&k, outcome, n);
  snprintf(why, whylen, "%s", k.why);
  seen_free(&got);
  kube_exec_free(&k);
  return rc;
}

static void outcomes_and_refusals(void) {
  char outcome[400], why[200];
  buf s = BUF_INIT;
  server_frame(&s, 0x82, "\x03{\"metadata\":{},\"status\":\"Success\"}", 36);
  server_frame(&s, 0x88, "\x03\xe8", 2);
  CHECK(feed_all(&s, outcome, sizeof outcome, why, sizeof why) == 2);
  CHECK_STR(outcome, "the command ended");
  buf_clear(&s);
  server_frame(&s, 0x88, "\x03\xf3going", 7);
  CHECK(feed_all(&s, outcome, sizeof outcome, why, sizeof why) == 2);
  CHECK_STR(outcome, "closed with code 1011: going");
  buf_clear(&s);
  server_frame(&s, 0x82, "\x01partial", 8);
  CHECK(feed_all(&s, outcome, sizeof outcome, why, sizeof why) == 0);
  CHECK_STR(outcome, "the connection ended without a close frame");
  static const struct {
    int first;
    const char *payload;
    size_t n;
    const char *why;
  } bad[] = {{0x81, "\x01text", 5, "text message"},
             {0x82, "\x04{}", 3, "channel 4"},
             {0x82, "\x00x", 2, "channel 0"},
             {0x82, "\xffx", 2, "channel 255"},
             {0x88, "x", 1, "one-byte"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    buf_clear(&s);
    server_frame(&s, bad[i].first, bad[i].payload, bad[i].n);
    CHECK(feed_all(&s, outcome, sizeof outcome, why, sizeof why) == -1);
    CHECK(strstr(why, bad[i].why) != NULL);
  }
  buf_free(&s);
}

static void stdin_goes_in_whole_messages(void) {
  size_t n = (5u << 20) / 2; /* 2.5 MiB: three messages */
  char *data = malloc(n);
  for (size_t i = 0; i < n; i++) data[i] = (char)(i * 13 + i / 4096);
  buf out = BUF_INIT, payload = BUF_INIT, joined = BUF_INIT;
  CHECK(kube_exec_stdin(&out, data, n) == 0);
  CHECK(kube_exec_stdin(&out, data, 0) == 0);
  const unsigned char *p = (const unsigned char *)out.data, *end = p + out.len;
  int messages = 0, opcode;
  while (p < end && client_frame(&p, &opcode, &payload) == 0) {
    messages++;
    CHECK(opcode == WS_BINARY && payload.data[0] == KUBE_STDIN && payload.len <= KUBE_EXEC_MESSAGE_MAX + 1);
    buf_append(&joined, payload.data + 1, payload.len - 1);
  }
  CHECK(messages == 3 && p == end);
  CHECK(joined.len == n && memcmp(joined.data, data, n) == 0);
  kube_exec k;
  kube_exec_init(&k, 4);
  buf_clear(&out);
  CHECK(kube_exec_end_stdin(&k, &out) == -1); /* v4 has no way */
  k.version = 5;
  CHECK(kube_exec_end_stdin(&k, &out) == 0);
  p = (const unsigned char *)out.data;
  CHECK(client_frame(&p, &opcode, &payload) == 0 && payload.len == 2 && memcmp(payload.data, "\xff\x00", 2) == 0);
  kube_exec_free(&k);
  buf_free(&out);
  buf_free(&payload);
  buf_free(&joined);
  free(data);
}

/* The body of a refused upgrade, however it is framed. */
static void refusal_bodies(void) {
  static const char *const heads[] = {
      "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 61\r\n\r\n",
      "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n",
      "HTTP/1.1 404 Not Found\r\n\r\n"};
  const char *json = "{\"kind\":\"Status\",\"message\":\"pods \\\"x\\\" not found\",\"code\":404}";
  CHECK(strlen(json) == 61);
  for (int i = 0; i < 3; i++) {
    http_message m;
    const char *why;
    CHECK(http_response_parse(heads[i], strlen(heads[i]), "GET", &m, &why) == 0);
    kube_refusal *r = kube_refusal_new(&m);
    buf body = BUF_INIT;
    if (i == 1) http_chunk(&body, json, 61), http_chunk(&body, "", 0);
    else buf_append_str(&body, json);
    int done = 0;
    for (size_t at = 0; at < body.len && !done; at += 5)
      done = kube_refusal_feed(r, body.data + at, at + 5 > body.len ? body.len - at : 5);
    CHECK(done == (i < 2)); /* the third ends with the connection */
    buf message = BUF_INIT;
    kube_refusal_message(r, &message);
    CHECK_STR(message.data, "pods \"x\" not found");
    buf_free(&message);
    buf_free(&body);
    kube_refusal_free(r);
    http_message_free(&m);
  }
}

int main(void) {
  RUN(the_accept_of_rfc_6455);
  RUN(the_request);
  RUN(the_answer);
  RUN(client_frames_are_masked_with_minimal_lengths);
  RUN(messages_in_any_cuts);
  RUN(a_large_message_streams_through);
  RUN(what_the_decoder_refuses);
  RUN(random_bytes_never_crash);
  RUN(channels_status_ping_and_close);
  RUN(outcomes_and_refusals);
  RUN(stdin_goes_in_whole_messages);
  RUN(refusal_bodies);
  TEST_EXIT();
}

/* kube_exec: the Kubernetes exec stream's channels (see kube_exec.h). */
#include "kube_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_wire.h"
#include "http_body.h"

int kube_exec_version(const char *protocol) {
  if (strcmp(protocol, "v5.channel.k8s.io") == 0) return 5;
  if (strcmp(protocol, "v4.channel.k8s.io") == 0) return 4;
  return 0;
}

void kube_exec_init(kube_exec *k, int version) {
  memset(k, 0, sizeof *k);
  ws_decoder_init(&k->ws);
  k->version = version;
  k->channel = -1;
}

void kube_exec_free(kube_exec *k) { buf_free(&k->status); }

/* ---- the server's messages ---- */

static int refuse(kube_exec *k, const char *why) {
  snprintf(k->why, sizeof k->why, "%s", why);
  return 1; /* stops the decoder; kube_exec_feed sees why */
}

static int on_start(void *ctx, int opcode) {
  kube_exec *k = ctx;
  if (opcode == WS_TEXT) return refuse(k, "a text message (the base64 protocols were not offered)");
  k->channel = -1;
  return 0;
}

static int on_payload(void *ctx, const char *data, size_t n) {
  kube_exec *k = ctx;
  if (k->channel < 0) {
    k->channel = (unsigned char)data[0];
    data++, n--;
    if (k->channel < KUBE_STDOUT || k->channel > KUBE_ERROR) {
      snprintf(k->why, sizeof k->why, "a message on channel %d", k->channel);
      return 1;
    }
  }
  if (n == 0) return 0;
  if (k->channel != KUBE_ERROR) return k->ev->output(k->ctx, k->channel, data, n);
  size_t room = KUBE_STATUS_MAX - k->status.len;
  return buf_append(&k->status, data, n < room ? n : room) ? refuse(k, "out of memory") : 0;
}

static int on_end(void *ctx) {
  ((kube_exec *)ctx)->channel = -1;
  return 0;
}

/* Answers with a control frame of ours. */
static int reply(kube_exec *k, int opcode, const char *data, size_t n) {
  buf frame = BUF_INIT;
  int rc = ws_frame(&frame, opcode, 1, data, n) ? refuse(k, "cannot make a frame")
                                                : k->ev->reply(k->ctx, &frame);
  buf_free(&frame);
  return rc;
}

static int on_close(kube_exec *k, const char *data, size_t n) {
  const char *reason;
  size_t len;
  ws_close_parse(data, n, &k->close_code, &reason, &len); /* one byte: the decoder refused it */
  snprintf(k->close_reason, sizeof k->close_reason, "%.*s", (int)len, reason);
  k->closed = 1;
  reply(k, WS_CLOSE, data, n < 2 ? n : 2); /* its code echoed, as RFC 6455 5.5.1 asks */
  return 1;
}

static int on_control(void *ctx, int opcode, const char *data, size_t n) {
  kube_exec *k = ctx;
  if (opcode == WS_PING) return reply(k, WS_PONG, data, n);
  if (opcode == WS_CLOSE) return on_close(k, data, n);
  return 0; /* a pong: nothing was asked */
}

static const ws_events EVENTS = {on_start, on_payload, on_end, on_control};

int kube_exec_feed(kube_exec *k, const char *data, size_t n, const kube_exec_events *ev, void *ctx) {
  if (k->closed) return 2;
  k->ev = ev;
  k->ctx = ctx;
  int rc = ws_decode(&k->ws, data, n, &EVENTS, k);
  if (rc < 0) snprintf(k->why, sizeof k->why, "%s", k->ws.why);
  if (k->why[0]) return -1;
  if (k->closed) return 2;
  return rc;
}

/* ---- ours ---- */

int kube_exec_stdin(buf *out, const void *data, size_t n) {
  const char *p = data;
  static const unsigned char channel = KUBE_STDIN;
  if (n && buf_reserve(out, n + (n / KUBE_EXEC_MESSAGE_MAX + 1) * (WS_FRAME_HEADER_MAX + 1)) != 0) return -1;
  while (n > 0) {
    size_t take = n < KUBE_EXEC_MESSAGE_MAX ? n : KUBE_EXEC_MESSAGE_MAX;
    unsigned char mask[4];
    if (ws_random(mask, sizeof mask) != 0 || ws_frame_header(out, WS_BINARY, 1, take + 1, mask) != 0 ||
        ws_mask_append(out, &channel, 1, mask, 0) != 0 || ws_mask_append(out, p, take, mask, 1) != 0)
      return -1;
    p += take, n -= take;
  }
  return 0;
}

int kube_exec_end_stdin(const kube_exec *k, buf *out) {
  static const unsigned char end[2] = {KUBE_CLOSE, KUBE_STDIN};
  if (k->version < 5) return -1;
  return ws_frame(out, WS_BINARY, 1, end, sizeof end);
}

void kube_exec_outcome(const kube_exec *k, char *out, size_t n) {
  buf message = BUF_INIT;
  int from_json = k->status.len ? docker_error_message(k->status.data, k->status.len, &message) : -1;
  if (from_json == 1)
    snprintf(out, n, "%.300s", message.data ? message.data : "");
  else if (from_json == 0 && strstr(k->status.data, "\"status\":\"Success\""))
    snprintf(out, n, "the command ended");
  else if (from_json == 0)
    snprintf(out, n, "the command ended: %.200s", message.data ? message.data : "");
  else if (k->closed)
    snprintf(out, n, "closed with code %d%s%s", k->close_code, k->close_reason[0] ? ": " : "", k->close_reason);
  else
    snprintf(out, n, "the connection ended without a close frame");
  buf_free(&message);
}

/* ---- a refused upgrade ---- */

struct kube_refusal {
  http_body body;
  buf text;
};

kube_refusal *kube_refusal_new(const http_message *m) {
  kube_refusal *r = calloc(1, sizeof *r);
  if (r) http_body_init(&r->body, m->body, m->length);
  return r;
}

int kube_refusal_feed(kube_refusal *r, const char *data, size_t n) {
  long used = http_body_feed(&r->body, data, n, &r->text);
  if (r->text.len > KUBE_STATUS_MAX) r->text.len = KUBE_STATUS_MAX, r->text.data[KUBE_STATUS_MAX] = '\0';
  return used < 0 || http_body_done(&r->body) || r->text.len == KUBE_STATUS_MAX;
}

void kube_refusal_message(const kube_refusal *r, buf *out) {
  if (r) docker_error_message(r->text.data, r->text.len, out);
}

void kube_refusal_free(kube_refusal *r) {
  if (!r) return;
  buf_free(&r->text);
  free(r);
}

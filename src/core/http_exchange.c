/* http_exchange: one request, one response (http_exchange.h). */
#include "http_exchange.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_body.h"
#include "http_head.h"

enum response_state {
  RESPONSE_HEAD, /* reading a head (again after a 1xx) */
  RESPONSE_BODY, /* reading its body */
  RESPONSE_RAW,  /* without a scrub, an answer that is not HTTP/1.x: passed on to the close */
  RESPONSE_DONE  /* complete: whatever else comes is not passed on */
};

struct http_exchange {
  http_body request;
  int request_chunked;
  unsigned long long dropped;
  char method[24];
  int client_minor;
  scrub *scrub;
  int state;
  buf head;
  size_t scanned;
  http_body response;
  int reframe; /* the response body goes to the client chunked */
  int sent;    /* bytes of the response went to the client */
  char why[400];
};

http_exchange *http_exchange_new(const http_exchange_opts *o) {
  http_exchange *hx = calloc(1, sizeof *hx);
  if (!hx) return NULL;
  http_body_init(&hx->request, o->request_body, o->request_length);
  hx->request_chunked = o->request_body == HTTP_BODY_CHUNKED;
  snprintf(hx->method, sizeof hx->method, "%s", o->method ? o->method : "GET");
  hx->client_minor = o->client_minor;
  hx->scrub = o->scrub;
  hx->state = RESPONSE_HEAD;
  return hx;
}

void http_exchange_free(http_exchange *hx) {
  if (!hx) return;
  scrub_free(hx->scrub);
  buf_free(&hx->head);
  free(hx);
}

const char *http_exchange_why(const http_exchange *hx) { return hx->why; }
unsigned long long http_exchange_dropped(const http_exchange *hx) { return hx->dropped; }
size_t http_exchange_replaced(const http_exchange *hx) { return hx->scrub ? scrub_count(hx->scrub) : 0; }
int http_exchange_request_complete(const http_exchange *hx) { return http_body_done(&hx->request); }

__attribute__((format(printf, 2, 3))) static int fail(http_exchange *hx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(hx->why, sizeof hx->why, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- the request ---- */

int http_exchange_client(http_exchange *hx, const char *data, size_t n, buf *up) {
  if (http_body_done(&hx->request)) {
    hx->dropped += n;
    return 0;
  }
  buf payload = BUF_INIT;
  long used = http_body_feed(&hx->request, data, n, hx->request_chunked ? &payload : NULL);
  if (used < 0) {
    buf_free(&payload);
    return fail(hx, "the request's body is malformed: %s", hx->request.why);
  }
  if (!hx->request_chunked) {
    buf_append(up, data, (size_t)used);
  } else {
    if (payload.len) http_chunk(up, payload.data, payload.len);
    if (http_body_done(&hx->request)) http_chunk(up, NULL, 0);
  }
  buf_free(&payload);
  hx->dropped += n - (size_t)used;
  return 0;
}

/* ---- the response ---- */

static void give(http_exchange *hx, buf *down, const char *data, size_t n) {
  if (!n) return;
  buf_append(down, data, n);
  hx->sent = 1;
}

/* A refusal in place of the answer, when none of it went to the client yet. */
static int refuse(http_exchange *hx, buf *down, const char *why) {
  snprintf(hx->why, sizeof hx->why, "%.399s", why);
  if (!hx->sent) {
    http_refusal(down, 502, why);
    hx->sent = 1;
  }
  hx->state = RESPONSE_DONE;
  return -1;
}

/* Body bytes for the client: scrubbed, then framed. */
static void give_payload(http_exchange *hx, buf *down, const char *data, size_t n, int last) {
  buf clean = BUF_INIT;
  scrub_feed(hx->scrub, data, n, &clean);
  if (last) scrub_flush(hx->scrub, &clean);
  if (hx->reframe) {
    if (clean.len) http_chunk(down, clean.data, clean.len);
    if (last) http_chunk(down, NULL, 0);
    hx->sent = 1;
  } else {
    give(hx, down, clean.data, clean.len);
  }
  buf_free(&clean);
}

static int hop_by_hop(const http_field *f, int body) {
  static const char *const dropped[] = {"transfer-encoding", "connection", "keep-alive", "proxy-connection", NULL};
  for (int i = 0; dropped[i]; i++)
    if (f->name_len == strlen(dropped[i]) && strncasecmp(f->name, dropped[i], f->name_len) == 0) return 1;
  /* the length of a body that comes re-framed; a HEAD's or a 304's stays */
  return body != HTTP_BODY_NONE && f->name_len == 14 && strncasecmp(f->name, "content-length", 14) == 0;
}

/* The head as the client gets it when the body is re-framed. */
static void scrubbed_head(http_exchange *hx, const http_message *m, const char *head, buf *down) {
  size_t line = (size_t)(strstr(head, "\r\n") - head);
  give(hx, down, head, line + 2);
  for (size_t i = 0; i < m->nfields; i++) {
    const http_field *f = &m->fields[i];
    if (hop_by_hop(f, m->body)) continue;
    buf_printf(down, "%s: %s\r\n", f->name, f->value);
  }
  if (m->body != HTTP_BODY_NONE && hx->reframe) buf_append_str(down, "Transfer-Encoding: chunked\r\n");
  buf_append_str(down, m->status >= 200 ? "Connection: close\r\n\r\n" : "\r\n");
}

/* What the scrub cannot see into. */
static int encoded(const http_message *m, char *coding, size_t cap) {
  int count;
  const char *value = http_field_value(m, "content-encoding", &count);
  if (!value || value[0] == '\0' || strcasecmp(value, "identity") == 0) return 0;
  snprintf(coding, cap, "%s", value);
  return 1;
}

/* A whole response head: on to its body, or the next head after a 1xx. */
static int on_head(http_exchange *hx, const char *raw, size_t len, buf *down) {
  buf text = BUF_INIT;
  if (hx->scrub) {
    scrub_feed(hx->scrub, raw, len, &text);
    scrub_flush(hx->scrub, &text);
  } else {
    buf_append(&text, raw, len);
  }
  http_message m;
  const char *why = NULL;
  char detail[500], coding[64];
  int rc = 0;
  if (http_response_parse(text.data, text.len, hx->method, &m, &why) < 0) {
    if (hx->scrub) {
      snprintf(detail, sizeof detail, "the upstream's answer is not an HTTP/1.x response (%s)", why);
      rc = refuse(hx, down, detail);
    } else {
      give(hx, down, text.data, text.len);
      hx->state = RESPONSE_RAW;
    }
  } else if (m.status == 101) {
    if (hx->scrub) rc = refuse(hx, down, "the upstream switched protocols (101), which luagent does not relay "
                                         "for a secret's host");
    else give(hx, down, text.data, text.len), hx->state = RESPONSE_RAW;
  } else if (hx->scrub && encoded(&m, coding, sizeof coding)) {
    snprintf(detail, sizeof detail, "the answer came %s-encoded (Content-Encoding), which luagent cannot search "
             "for a secret's value; it asked for identity (Accept-Encoding)", coding);
    rc = refuse(hx, down, detail);
  } else {
    hx->reframe = hx->scrub && hx->client_minor >= 1 && m.body != HTTP_BODY_NONE;
    if (hx->scrub) scrubbed_head(hx, &m, text.data, down);
    else give(hx, down, text.data, text.len);
    if (m.status >= 200) {
      http_body_init(&hx->response, m.body, m.length);
      hx->state = m.body == HTTP_BODY_NONE ? RESPONSE_DONE : RESPONSE_BODY;
    }
  }
  http_message_free(&m);
  buf_free(&text);
  return rc;
}

/* Body bytes; returns how many belonged to the body, or -1. */
static long on_body(http_exchange *hx, const char *data, size_t n, buf *down) {
  buf payload = BUF_INIT;
  long used = http_body_feed(&hx->response, data, n, hx->scrub ? &payload : NULL);
  if (used < 0) {
    buf_free(&payload);
    if (!hx->scrub) { /* passed on as it came: the client judges it */
      give(hx, down, data, n);
      hx->state = RESPONSE_RAW;
      return (long)n;
    }
    char detail[200];
    snprintf(detail, sizeof detail, "the upstream's response body is malformed: %s", hx->response.why);
    return refuse(hx, down, detail);
  }
  int last = http_body_done(&hx->response);
  if (hx->scrub) give_payload(hx, down, payload.data, payload.len, last);
  else give(hx, down, data, (size_t)used);
  buf_free(&payload);
  if (last) hx->state = RESPONSE_DONE;
  return used;
}

/* A head gathered whole: handled, and what came after it is the next bytes (in carry). */
static int head_bytes(http_exchange *hx, const char **data, size_t *n, buf *down, buf *carry) {
  buf_append(&hx->head, *data, *n);
  *n = 0;
  long end = http_head_end(hx->head.data, hx->head.len, &hx->scanned);
  if (end == 0) return 0;
  if (end < 0) {
    if (hx->scrub) return refuse(hx, down, "the upstream's response head is longer than 64 KiB");
    give(hx, down, hx->head.data, hx->head.len);
    buf_clear(&hx->head);
    hx->state = RESPONSE_RAW;
    return 0;
  }
  int rc = on_head(hx, hx->head.data, (size_t)end, down);
  buf_clear(carry);
  buf_append(carry, hx->head.data + end, hx->head.len - (size_t)end);
  buf_clear(&hx->head);
  hx->scanned = 0;
  *data = carry->data ? carry->data : "", *n = carry->len;
  return rc;
}

int http_exchange_upstream(http_exchange *hx, const char *data, size_t n, buf *down) {
  buf carry = BUF_INIT;
  int rc = 0;
  while (rc == 0 && hx->state != RESPONSE_DONE && n > 0) {
    if (hx->state == RESPONSE_RAW) {
      give(hx, down, data, n);
      break;
    }
    if (hx->state == RESPONSE_HEAD) {
      rc = head_bytes(hx, &data, &n, down, &carry);
      continue;
    }
    long used = on_body(hx, data, n, down);
    if (used < 0) rc = -1;
    else data += used, n -= (size_t)used;
  }
  buf_free(&carry);
  if (rc < 0) return -1;
  return hx->state == RESPONSE_DONE;
}

int http_exchange_upstream_end(http_exchange *hx, buf *down) {
  switch (hx->state) {
  case RESPONSE_DONE:
  case RESPONSE_RAW:
    return 1;
  case RESPONSE_BODY:
    if (hx->scrub) give_payload(hx, down, "", 0, hx->response.kind == HTTP_BODY_CLOSE);
    if (hx->response.kind == HTTP_BODY_CLOSE) {
      hx->state = RESPONSE_DONE;
      return 1;
    }
    fail(hx, "the upstream closed the connection before its response ended");
    return 0;
  default: /* a head cut short: passed on, scrubbed, for the client to judge */
    if (hx->head.len) {
      buf text = BUF_INIT;
      if (hx->scrub) scrub_feed(hx->scrub, hx->head.data, hx->head.len, &text);
      else buf_append(&text, hx->head.data, hx->head.len);
      give(hx, down, text.data, text.len);
      buf_free(&text);
    }
    fail(hx, "the upstream closed the connection before its response head ended");
    return 0;
  }
}

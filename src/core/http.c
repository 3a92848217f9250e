/* http: requests on the event loop (see http.h). */
#include "http.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct http_xfer {
  loop_xfer lx;
  loop *lp;
  struct curl_slist *headers;
  FILE *body_fp;
  http_source source;
  http_sink sink;
  size_t max_body;
  int sink_success_only;
  http_done_fn done;
  void *done_ctx;
  int finished;
  int overflow;      /* the in-memory body passed max_body */
  CURLcode result;
  long status;
  buf body;
  buf resp_headers;
  double started;
  double elapsed;
  double idle_timeout; /* see http_request */
  double last_byte;    /* loop_now() of the last response byte; 0: the response has not begun */
  int paused;          /* its sink paused it: no byte is expected until http_resume */
  int idle;            /* it was stopped by the idle timeout */
  loop_timer idle_timer;
  char errbuf[CURL_ERROR_SIZE];
  char message[CURL_ERROR_SIZE + 64];
};

/* A byte of the response came: the idle clock starts (at the first one) or starts again. */
static void note_byte(http_xfer *x) {
  if (x->idle_timeout > 0 && x->last_byte == 0) loop_timer_start(x->lp, &x->idle_timer, x->idle_timeout);
  x->last_byte = loop_now();
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx) {
  http_xfer *x = ctx;
  size_t len = size * n;
  note_byte(x);
  if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
    buf_clear(&x->resp_headers); /* a new response (after 100 Continue or a redirect) */
    return len;
  }
  const char *colon = memchr(data, ':', len);
  if (!colon) return len;
  size_t name_len = (size_t)(colon - data);
  const char *value = colon + 1, *end = data + len;
  while (value < end && (*value == ' ' || *value == '\t')) value++;
  while (end > value && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
  for (size_t i = 0; i < name_len; i++) buf_append_char(&x->resp_headers, (char)tolower((unsigned char)data[i]));
  buf_append_char(&x->resp_headers, '\0');
  buf_append(&x->resp_headers, value, (size_t)(end - value));
  buf_append_char(&x->resp_headers, '\0');
  return len;
}

#define ERROR_BODY_CAP 65536

static int diverted_error_body(http_xfer *x) {
  if (!x->sink_success_only) return 0;
  long status = http_status_now(x);
  return status < 200 || status >= 300;
}

static size_t on_write(char *data, size_t size, size_t n, void *ctx) {
  http_xfer *x = ctx;
  size_t len = size * n;
  note_byte(x);
  if (x->sink.write && diverted_error_body(x)) {
    /* keep the server's error message, a bounded amount of it */
    if (x->body.len < ERROR_BODY_CAP) buf_append(&x->body, data, len);
    return len;
  }
  if (x->sink.write) {
    size_t rc = x->sink.write(x->sink.ctx, data, len);
    if (rc == HTTP_SINK_PAUSE) x->paused = 1;
    return rc == HTTP_SINK_PAUSE ? CURL_WRITEFUNC_PAUSE : rc;
  }
  if (x->max_body && x->body.len + len > x->max_body) {
    x->overflow = 1;
    return 0; /* aborts the transfer */
  }
  return buf_append(&x->body, data, len) == 0 ? len : 0;
}

static size_t read_file(char *dst, size_t size, size_t n, void *ctx) {
  http_xfer *x = ctx;
  size_t got = fread(dst, 1, size * n, x->body_fp);
  if (got == 0 && ferror(x->body_fp)) return CURL_READFUNC_ABORT;
  return got;
}

static size_t read_source(char *dst, size_t size, size_t n, void *ctx) {
  http_xfer *x = ctx;
  size_t got = x->source.read(x->source.ctx, dst, size * n);
  return got == (size_t)-1 ? CURL_READFUNC_ABORT : got;
}

static void on_done(loop_xfer *lx, CURLcode rc) {
  http_xfer *x = (http_xfer *)lx;
  loop_timer_stop(x->lp, &x->idle_timer);
  x->finished = 1;
  x->result = rc;
  x->elapsed = loop_now() - x->started;
  curl_easy_getinfo(x->lx.easy, CURLINFO_RESPONSE_CODE, &x->status);
  if (x->done) x->done(x, x->done_ctx);
}

/* The idle timer: no byte for idle_timeout seconds since the last one (a
 * paused transfer waits for its owner, not the server) ends the transfer as
 * a timeout; otherwise it is set again for the rest of the time. */
static void on_idle_timer(loop_timer *t) {
  http_xfer *x = (http_xfer *)((char *)t - offsetof(http_xfer, idle_timer));
  double quiet = loop_now() - x->last_byte;
  if (x->paused || quiet < x->idle_timeout) {
    loop_timer_start(x->lp, t, x->paused ? x->idle_timeout : x->idle_timeout - quiet);
    return;
  }
  x->idle = 1;
  loop_remove(x->lp, &x->lx);
  on_done(&x->lx, CURLE_OPERATION_TIMEDOUT);
}

static int set_body(http_xfer *x, const http_request *req, char *err, size_t errlen) {
  CURL *e = x->lx.easy;
  const char *method = req->method ? req->method : "GET";
  if (req->body_file || req->body_source) {
    long long length = -1;
    if (req->body_file) {
      x->body_fp = fopen(req->body_file, "rb");
      if (!x->body_fp) {
        snprintf(err, errlen, "cannot open request body %s: %s", req->body_file, strerror(errno));
        return -1;
      }
      if (fseeko(x->body_fp, 0, SEEK_END) == 0) length = ftello(x->body_fp);
      rewind(x->body_fp);
      curl_easy_setopt(e, CURLOPT_READFUNCTION, read_file);
    } else {
      x->source = *req->body_source;
      length = x->source.length;
      curl_easy_setopt(e, CURLOPT_READFUNCTION, read_source);
    }
    curl_easy_setopt(e, CURLOPT_READDATA, x);
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    if (length >= 0) curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)length);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  } else if (req->body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
  } else if (strcmp(method, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (strcmp(method, "GET") != 0) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0) {
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }
  }
  return 0;
}

/* Seconds as libcurl's milliseconds, rounded up and at least 1: for libcurl 0
 * means "no timeout", so what is left of a deadline (0.0004 s) must not
 * become 0 and wait for ever. */
static long timeout_ms(double seconds) {
  double ms = seconds * 1000;
  long whole = (long)ms;
  if ((double)whole < ms) whole++;
  return whole < 1 ? 1 : whole;
}

/* PEM text as a curl blob (copied by curl: the text may go after the call). */
static void set_blob(CURL *e, CURLoption option, const char *pem) {
  struct curl_blob blob = {(void *)pem, strlen(pem), CURL_BLOB_COPY};
  curl_easy_setopt(e, option, &blob);
}

void http_set_tls(CURL *e, const http_tls *tls) {
  if (tls->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (tls->ca_file) curl_easy_setopt(e, CURLOPT_CAINFO, tls->ca_file);
  if (tls->cert_file) curl_easy_setopt(e, CURLOPT_SSLCERT, tls->cert_file);
  if (tls->key_file) curl_easy_setopt(e, CURLOPT_SSLKEY, tls->key_file);
  if (tls->ca_pem) set_blob(e, CURLOPT_CAINFO_BLOB, tls->ca_pem);
  if (tls->cert_pem) set_blob(e, CURLOPT_SSLCERT_BLOB, tls->cert_pem);
  if (tls->key_pem) set_blob(e, CURLOPT_SSLKEY_BLOB, tls->key_pem);
}

static void set_options(http_xfer *x, const http_request *req) {
  CURL *e = x->lx.easy;
  curl_easy_setopt(e, CURLOPT_URL, req->url);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->errbuf);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  if (req->unix_socket) curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
  if (req->timeout > 0) curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms(req->timeout));
  if (req->connect_timeout > 0) curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms(req->connect_timeout));
  http_set_tls(e, &req->tls);
  if (req->decompress) curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  /* no "Expect: 100-continue" round trip before a body */
  x->headers = curl_slist_append(x->headers, "Expect:");
  for (const char *const *h = req->headers; h && *h; h++) x->headers = curl_slist_append(x->headers, *h);
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
}

http_xfer *http_start(loop *lp, const http_request *req, const http_sink *sink, http_done_fn done,
                      void *done_ctx, char *err, size_t errlen) {
  http_xfer *x = calloc(1, sizeof *x);
  if (!x) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  x->lp = lp;
  x->done = done;
  x->done_ctx = done_ctx;
  x->max_body = req->max_body;
  x->sink_success_only = req->sink_success_only;
  x->idle_timeout = req->idle_timeout;
  loop_timer_init(&x->idle_timer, on_idle_timer);
  if (sink) x->sink = *sink;
  x->lx.done = on_done;
  x->lx.easy = curl_easy_init();
  if (!x->lx.easy) {
    snprintf(err, errlen, "cannot create a curl handle");
    free(x);
    return NULL;
  }
  set_options(x, req);
  if (set_body(x, req, err, errlen) != 0) {
    http_free(x);
    return NULL;
  }
  x->started = loop_now();
  if (loop_add(lp, &x->lx) != 0) {
    snprintf(err, errlen, "cannot start the transfer");
    http_free(x);
    return NULL;
  }
  return x;
}

void http_resume(http_xfer *x) {
  x->paused = 0;
  if (x->last_byte > 0) x->last_byte = loop_now();
  loop_unpause(x->lp, &x->lx);
}

void http_abort(http_xfer *x) {
  if (!x) return;
  loop_timer_stop(x->lp, &x->idle_timer);
  loop_remove(x->lp, &x->lx);
}

void http_free(http_xfer *x) {
  if (!x) return;
  http_abort(x);
  if (x->lx.easy) curl_easy_cleanup(x->lx.easy);
  curl_slist_free_all(x->headers);
  if (x->body_fp) fclose(x->body_fp);
  buf_free(&x->body);
  buf_free(&x->resp_headers);
  free(x);
}

int http_finished(const http_xfer *x) { return x->finished; }
int http_failed(const http_xfer *x) { return x->result != CURLE_OK; }
/* Before the transfer ends (e.g. stopped by its sink) the status comes from curl. */
long http_status(const http_xfer *x) { return x->finished ? x->status : http_status_now(x); }

long http_status_now(const http_xfer *x) {
  long status = 0;
  curl_easy_getinfo(x->lx.easy, CURLINFO_RESPONSE_CODE, &status);
  return status;
}
const buf *http_body(const http_xfer *x) { return &x->body; }
const buf *http_headers(const http_xfer *x) { return &x->resp_headers; }
double http_elapsed(const http_xfer *x) { return x->elapsed; }

const char *http_header(const http_xfer *x, const char *name) {
  const char *p = x->resp_headers.data, *end = p + x->resp_headers.len;
  const char *found = NULL;
  while (p && p < end) {
    const char *value = p + strlen(p) + 1;
    if (strcmp(p, name) == 0) found = value;
    p = value + strlen(value) + 1;
  }
  return found;
}

const char *http_error_kind(const http_xfer *x) {
  if (x->result == CURLE_WRITE_ERROR) return x->overflow ? "too_large" : "aborted";
  return http_curl_kind(x->result);
}

const char *http_curl_kind(CURLcode rc) {
  switch (rc) {
    case CURLE_OK: return NULL;
    case CURLE_OPERATION_TIMEDOUT: return "timeout";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT: return "connect";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_USE_SSL_FAILED: return "tls";
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return "network";
    case CURLE_WRITE_ERROR:
    case CURLE_ABORTED_BY_CALLBACK: return "aborted";
    case CURLE_READ_ERROR: return "io";
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL: return "bad_url";
    default: return "protocol";
  }
}

const char *http_error_message(const http_xfer *x) {
  http_xfer *mx = (http_xfer *)x;
  if (x->result == CURLE_OK) return NULL;
  const char *detail = x->errbuf[0] ? x->errbuf : curl_easy_strerror(x->result);
  if (x->overflow)
    snprintf(mx->message, sizeof mx->message, "response body larger than %zu bytes", x->max_body);
  else if (x->idle)
    snprintf(mx->message, sizeof mx->message, "no data for %g s after the response began (idle_timeout)",
             x->idle_timeout);
  else
    snprintf(mx->message, sizeof mx->message, "%s", detail);
  return x->message;
}

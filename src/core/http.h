/* http: HTTP requests on the event loop (libcurl easy handles in the loop's
 * multi handle, so connections are reused). Pure C, no Lua.
 *
 * A request body comes from memory, a file (streamed), or a producer callback
 * (streamed, e.g. a tar built on the fly). A response body is collected in
 * memory or handed to a sink callback chunk by chunk; a sink may pause the
 * transfer (backpressure) and the owner resumes it with http_resume(). */
#ifndef LUAGENT_HTTP_H
#define LUAGENT_HTTP_H

#include <stddef.h>

#include "buf.h"
#include "loop.h"

/* Returned by a sink to pause the transfer until http_resume(). */
#define HTTP_SINK_PAUSE ((size_t)-1)

typedef struct http_sink {
  /* Returns n to go on, HTTP_SINK_PAUSE to pause, anything else aborts. */
  size_t (*write)(void *ctx, const char *data, size_t n);
  void *ctx;
} http_sink;

typedef struct http_source {
  /* Fills up to n bytes; returns the count, 0 at the end, or (size_t)-1 on error. */
  size_t (*read)(void *ctx, char *dst, size_t n);
  void *ctx;
  long long length; /* -1: unknown (sent chunked) */
} http_source;

/* TLS: how a peer is verified and who we are to it. The CA, certificate
 * and key are PEM, each given as a file or as text held in memory (a
 * kubeconfig's *-data fields: never written to disk); NULL: curl's default
 * (the system's CAs, no client certificate). insecure skips the peer checks. */
typedef struct http_tls {
  int insecure;
  const char *ca_file, *cert_file, *key_file;
  const char *ca_pem, *cert_pem, *key_pem;
} http_tls;

typedef struct http_request {
  const char *method;            /* default GET */
  const char *url;
  const char *const *headers;    /* "Name: value" strings, NULL-terminated; may be NULL */
  const char *body;              /* in memory; kept alive by the caller */
  size_t body_len;
  const char *body_file;         /* streamed from this file */
  const http_source *body_source;/* streamed from a producer */
  const char *unix_socket;       /* connect through this socket instead of TCP */
  double timeout;                /* whole request, seconds; 0: none */
  double connect_timeout;        /* seconds; 0: curl's default */
  double idle_timeout;           /* no byte received for this long once the response began
                                    (the wait for it is `timeout`'s; a paused transfer's
                                    time does not count); 0: none */
  http_tls tls;                  /* how the peer is verified, and our certificate */
  int decompress;                /* accept and decode gzip/deflate/br */
  size_t max_body;               /* in-memory body cap; 0: none */
  int sink_success_only;         /* a non-2xx body goes to memory (http_body), not the sink */
} http_request;

typedef struct http_xfer http_xfer;

/* Called once when the transfer ends (successfully or not). */
typedef void (*http_done_fn)(http_xfer *x, void *ctx);

/* Starts a request. `sink` may be NULL (body collected in memory). Returns
 * NULL with a reason in err when the request could not be started. */
http_xfer *http_start(loop *lp, const http_request *req, const http_sink *sink,
                      http_done_fn done, void *done_ctx, char *err, size_t errlen);
void http_resume(http_xfer *x);
/* Stops a transfer; `done` is not called. Safe after completion. */
void http_abort(http_xfer *x);
void http_free(http_xfer *x);

int http_finished(const http_xfer *x);
/* After completion: 0 on success, else the failure kind and message. */
int http_failed(const http_xfer *x);
const char *http_error_kind(const http_xfer *x);
const char *http_error_message(const http_xfer *x);
long http_status(const http_xfer *x);
/* The status of the response being received (0 before its headers), for
 * sinks that must treat an error body differently from the payload. */
long http_status_now(const http_xfer *x);
const buf *http_body(const http_xfer *x);
/* Response headers as consecutive "name\0value\0" pairs, names lower-cased,
 * for the final response (interim 100/redirect headers are dropped). */
const buf *http_headers(const http_xfer *x);
/* Looks up a response header (lower-case name); NULL if absent. */
const char *http_header(const http_xfer *x, const char *name);
double http_elapsed(const http_xfer *x);

/* Sets a curl handle's TLS options as a request's are set (the one place
 * that does, for http_start, rawconn and so the attaches). */
void http_set_tls(CURL *e, const http_tls *tls);
/* The failure kind (a luagent.errors kind: timeout, connect, tls, network,
 * aborted, io, bad_url, protocol) of a curl result; NULL for CURLE_OK. */
const char *http_curl_kind(CURLcode rc);

#endif

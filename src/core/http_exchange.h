/* http_exchange: one request and its response through luagent's egress proxy,
 * once the request head has been parsed (http_head.h) and judged. Exactly one
 * request goes upstream: its body as the head framed it (Content-Length bytes,
 * or chunked: decoded and framed again), and nothing after it: bytes a client
 * sends past its body (a pipelined or smuggled request) are counted and
 * dropped. The response is read to its end, and the exchange is complete
 * then, even when the upstream ignores "Connection: close" and would serve
 * more. With a scrub (TLS ended at luagent, a secret's host), every byte of
 * the response, head and body, passes through it: the body is decoded, its
 * secret values replaced by their placeholders, and framed again (chunked to
 * an HTTP/1.1 client, else up to the close); an answer the scrub cannot see
 * into (Content-Encoding other than identity) or cannot read is refused with
 * a 502 instead. Without one, the response goes on byte for byte. Pure C.
 *
 *   hx = http_exchange_new(&opts)
 *   http_exchange_client(hx, data, n, &up)     the client's bytes after its head; up gets
 *                                              what goes upstream. 0, or -1 (a malformed body)
 *   http_exchange_upstream(hx, data, n, &down) the upstream's bytes; down gets what goes to
 *                                              the client. 0 more to come, 1 the response is
 *                                              complete, -1 refused (down holds the refusal
 *                                              when nothing went to the client yet)
 *   http_exchange_upstream_end(hx, &down)      the upstream closed: 1 the response was
 *                                              complete, 0 it was cut short
 *   http_exchange_why(hx)                      why the last -1 */
#ifndef LUAGENT_HTTP_EXCHANGE_H
#define LUAGENT_HTTP_EXCHANGE_H

#include <stddef.h>

#include "buf.h"
#include "scrub.h"

typedef struct http_exchange_opts {
  int request_body;                  /* enum http_body_kind: NONE, LENGTH or CHUNKED */
  unsigned long long request_length; /* LENGTH */
  const char *method;                /* the request's (a HEAD's response has no body) */
  int client_minor;                  /* the client's HTTP/1.<minor> */
  scrub *scrub;                      /* NULL: the response passes as it is; the exchange owns it */
} http_exchange_opts;

typedef struct http_exchange http_exchange;

http_exchange *http_exchange_new(const http_exchange_opts *opts);
int http_exchange_client(http_exchange *hx, const char *data, size_t n, buf *up);
int http_exchange_request_complete(const http_exchange *hx);
int http_exchange_upstream(http_exchange *hx, const char *data, size_t n, buf *down);
int http_exchange_upstream_end(http_exchange *hx, buf *down);
unsigned long long http_exchange_dropped(const http_exchange *hx);
size_t http_exchange_replaced(const http_exchange *hx);
const char *http_exchange_why(const http_exchange *hx);
void http_exchange_free(http_exchange *hx);

#endif

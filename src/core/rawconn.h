/* rawconn: one raw byte stream to a peer, made by libcurl, driven by the event loop.
 *
 * libcurl makes the connection (CURLOPT_CONNECT_ONLY: connect, and the TLS
 * handshake with certificate checks for https://) in a multi handle of the
 * connection's own, so nothing blocks; afterwards every byte goes through
 * curl_easy_send/recv, so a unix socket, TCP and TLS are the same code. Two
 * users: the engine's hijacked exec attach (attach.c) and the upstream
 * connections of sandbox egress (the host's side of a sandbox's proxy). Pure C. */
#ifndef LUAGENT_RAWCONN_H
#define LUAGENT_RAWCONN_H

#include <stddef.h>
#include <sys/socket.h>

#include "http.h"
#include "loop.h"

typedef struct rawconn_target {
  const char *url;         /* http://host[:port] (TCP) or https://host[:port] (TLS, verified) */
  const char *unix_socket; /* connect through this socket instead */
  http_tls tls;             /* TLS options (https:// urls) */
  double connect_timeout;  /* connect + TLS handshake, seconds; 0: 10 */
  int keepalive;           /* TCP keepalive (30 s idle): a peer that vanishes is noticed */
  const char *resolve;     /* "host:port:address": connect there for that name (curl's --resolve) */
  /* Asked for each address before a socket is opened for it: 0 refuses it
   * (the connection then fails, or curl tries the name's next address) with
   * a reason in why. NULL: every address. */
  int (*vet)(void *ctx, const struct sockaddr *address, char *why, size_t whylen);
  void *vet_ctx;
  const char *label;       /* how messages name the peer: "the Docker engine at unix://..." */
} rawconn_target;

typedef struct rawconn_callbacks {
  void (*on_connected)(void *ctx);
  /* Bytes read; n == 0: the peer ended its side (no more on_data). Returns
   * -1 when the owner ended the connection meanwhile (rawconn_end). */
  int (*on_data)(void *ctx, const char *data, size_t n);
  /* The connection failed or was ended by rawconn_end: kind is a
   * luagent.errors kind (connect: no connection; tls; network: it broke; denied: vet
   * refused every address)
   * or the owner's; why is one line naming the peer. It must not free the
   * connection. Never called after rawconn_free. */
  void (*on_close)(void *ctx, const char *kind, const char *why);
  /* Everything queued was written (may be NULL): a writer held back by
   * rawconn_pending may go on. */
  void (*on_drained)(void *ctx);
} rawconn_callbacks;

typedef struct rawconn rawconn;

#define RAWCONN_URL_MAX 340

/* The url (and, with pin, the resolve entry) for a canonical host
 * (http_head.h): "http(s)://host:port", "[v6]" bracketed, and
 * "host:port:pin" so libcurl connects to the pinned address. Text that is
 * not a canonical host is refused (-1, why in err), so libcurl never parses
 * a host another parser judged. url and resolve: RAWCONN_URL_MAX bytes. */
int rawconn_url(const char *host, int port, int tls, const char *pin, char *url, char *resolve, char *err,
                size_t errlen);

/* Starts connecting (the loop does the rest); NULL with a reason in err
 * when out of memory or curl refused the options. */
rawconn *rawconn_start(loop *lp, const rawconn_target *target, const rawconn_callbacks *cb, void *ctx, char *err,
                       size_t errlen);
/* Queues bytes, written as the socket takes them (also those queued while
 * connecting). Returns 0, or -1 once closed. */
int rawconn_write(rawconn *c, const void *data, size_t n);
/* Bytes queued and not yet taken by the socket. */
size_t rawconn_pending(const rawconn *c);
/* Stops (1) or resumes (0) reading: a reader that cannot keep up holds the peer back. */
void rawconn_pause(rawconn *c, int paused);
/* Once what is queued is written, ends the sending side (TCP only: a TLS
 * stream cannot be half-closed, so it is left open). */
void rawconn_shutdown(rawconn *c);
/* Ends the connection now, reporting kind and why through on_close. */
void rawconn_end(rawconn *c, const char *kind, const char *why);
/* The address connected to ("127.0.0.1", "::1"), "" before. */
const char *rawconn_address(const rawconn *c);
/* Whether it is connected and not closed. */
int rawconn_open(const rawconn *c);
/* Closes the connection now; no callback runs afterwards. Safe on NULL. */
void rawconn_free(rawconn *c);

#endif

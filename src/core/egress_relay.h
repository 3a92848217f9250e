/* egress_relay: the host's side of a sandbox's egress — the stream of
 * `luagent-supervisor egress` (sandbox/supervisor/DESIGN.md, "Egress"), which
 * relays every connection a sandbox makes to its proxy port, and the upstream
 * connection the host makes for each. A state machine over the event loop,
 * in pure C: frames from the relay (src/core/egress_frames.h) become
 * connections with their bytes; a connection's request head is parsed once
 * (http_head.h), its TLS may end here (mitm.h), its upstream is made by
 * libcurl with every address vetted (rawconn.h, netaddr.h), and then it is
 * spliced — raw, or as one exchange (http_exchange.h). Flow control: at
 * most EGRESS_WINDOW bytes of a connection in flight each way, credited back
 * with K frames. The decisions (rules, secrets, what to refuse) are the
 * caller's (luagent.sandbox.egress, through src/lua/lua_egress.c, a thin
 * binding); this file only does what it is told and says what happened.
 *
 * Nothing here waits: the caller asks, and the relay tells it through its
 * hooks when something a waiter may want happened (a connection changed, the
 * relay became ready or ended), so the caller can look again. */
#ifndef LUAGENT_EGRESS_RELAY_H
#define LUAGENT_EGRESS_RELAY_H

#include <stddef.h>

#include "attach.h"
#include "buf.h"
#include "capped.h"
#include "http_head.h"
#include "loop.h"
#include "netaddr.h"
#include "scrub.h"

typedef struct egress_relay egress_relay;
typedef struct egress_conn egress_conn;

typedef struct egress_relay_hooks {
  /* bytes for the relay (its frames), when the caller carries the stream
   * (egress_relay_new); egress_relay_start's stream is a Docker exec attach */
  void (*write)(void *ctx, const char *data, size_t n);
  /* the relay said it listens (ready), or it ended (egress_relay_ended) */
  void (*relay_changed)(void *ctx);
  /* a connection came, or one may now be accepted */
  void (*accepted)(void *ctx);
  /* something of c a waiter may want changed: bytes came, it connected,
   * it ended, it finished; also just before c is freed (gone = 1) */
  void (*conn_changed)(void *ctx, egress_conn *c, int gone);
} egress_relay_hooks;

/* A relay whose stream the caller carries: what the relay says goes in with
 * egress_relay_input (and _input_stderr), its end with
 * egress_relay_stream_ended, and what goes to it comes out of hooks->write.
 * want_ca: a per-session CA for TLS ending here. NULL with why in err. */
egress_relay *egress_relay_new(loop *lp, int want_ca, const egress_relay_hooks *hooks, void *ctx, char *err,
                               size_t errlen);
/* Bytes of the relay's frames: 0, or -1 when they break its protocol (it ends). */
int egress_relay_input(egress_relay *r, const char *data, size_t n);
void egress_relay_input_stderr(egress_relay *r, const char *data, size_t n);
/* The stream ended (kind: an attach.h error kind when it never opened). */
void egress_relay_stream_ended(egress_relay *r, const char *kind, const char *why);

/* A relay over a Docker exec attach (attach.h target and exec start body),
 * as a session's egress runs. NULL with why in err. */
egress_relay *egress_relay_start(loop *lp, const attach_target *target, const char *body, int want_ca,
                                 const egress_relay_hooks *hooks, void *ctx, char *err, size_t errlen);
/* Ends every connection and the stream; frees everything. No hook runs. */
void egress_relay_free(egress_relay *r);

int egress_relay_ready(const egress_relay *r);
/* 1 (with why it ended) once the stream is gone. */
int egress_relay_ended(const egress_relay *r, const char **why);
/* Marks it ended for why (a timeout of the caller's); hooks run. */
void egress_relay_end(egress_relay *r, const char *why);
/* The error kind of a failed start ("docker_unreachable", ...), "" when it started. */
const char *egress_relay_open_error(const egress_relay *r);
/* What the relay wrote on its stderr (capped), for a failed start. */
void egress_relay_diagnostics(const egress_relay *r, buf *out);

/* The oldest connection not yet handed out, now handed out; NULL when none. */
egress_conn *egress_relay_accept(egress_relay *r);
egress_conn *egress_relay_find(egress_relay *r, long long id);

/* Bytes both ways over every connection at most (0: no limit); past it, the
 * connection that carries bytes ends (kind "max_bytes"). */
void egress_relay_limit(egress_relay *r, long long max_bytes);

typedef struct egress_counters {
  long long connections, open, bytes_up, bytes_down;
} egress_counters;
void egress_relay_counters(const egress_relay *r, egress_counters *out);
/* The session CA's certificate (never its key); 0, or -1 without a CA. */
int egress_relay_ca_pem(const egress_relay *r, buf *out);

/* ---- one connection ---- */

long long egress_conn_id(const egress_conn *c);
/* The caller's own pointer (the binding keeps its waiter there). */
void *egress_conn_user(const egress_conn *c);
void egress_conn_set_user(egress_conn *c, void *user);

/* Nothing more can come from the client (it closed, or the connection
 * ended): 1, with why ("" when it just closed). */
int egress_conn_closed(const egress_conn *c, const char **why);

/* The request head (kind: HTTP_PROXY_REQUEST or HTTP_ORIGIN_REQUEST), once
 * its end is there: 1 with m filled (free it with http_message_free, whatever the answer) and
 * its framing kept for an exchange; 0 not yet; -1 refused (*status 400, 431
 * for a head over HTTP_HEAD_MAX however it arrives, 501; *why). The bytes
 * after the head stay for splice. The end is looked for only in what came
 * since the last look. */
int egress_conn_head(egress_conn *c, int kind, http_message *m, int *status, const char **why);

/* The server name of the TLS ClientHello the client began with (kept for
 * splice): as tls_hello_sni (mitm.h): 1 name, 2 none, 0 not yet, -1 (why). */
int egress_conn_hello(egress_conn *c, char *name, size_t cap, const char **why);

/* Bytes to the client (through TLS once it ends here); close: then the
 * connection ends. -1 when it is over already. */
int egress_conn_reply(egress_conn *c, const char *data, size_t n, int close);

/* Where the upstream connection goes: a canonical host (http_head.h), the
 * address to connect to instead of resolving (pin), and the address rules
 * checked for each address before a socket opens. */
typedef struct egress_upstream {
  const char *host;
  int port;
  int tls;             /* https: libcurl makes TLS, verified with ca_file and the system's CAs */
  const char *pin;     /* an IP address, or NULL */
  const char *ca_file;
  const net_rule *policy;
  size_t npolicy;
  int need_rule;       /* the target was an IP literal: only an address rule allows it */
  double timeout;      /* connect + TLS, seconds */
  const char *label;   /* how messages name it */
} egress_upstream;

/* Starts the upstream connection: 0, or -1 with why in err (the host was
 * not canonical: the caller's mistake; or libcurl refused the options). */
int egress_conn_connect(egress_conn *c, const egress_upstream *u, char *err, size_t errlen);
/* 0 still connecting; 1 connected (address: the one connected to); -1
 * failed or ended (kind: denied, connect, tls, closed; why). */
int egress_conn_connected(const egress_conn *c, const char **address, const char **kind, const char **why);

/* TLS with the client ends here, with a certificate for host signed by the
 * session CA; what came so far goes through it. 0, or -1 with why in err. */
int egress_conn_terminate(egress_conn *c, const char *host, char *err, size_t errlen);

/* first, then what the client sent (and sends), go upstream; the
 * upstream's bytes go to the client. exchange: one request (its body as
 * egress_conn_head framed it) and its response, ending with it; scrub
 * (owned by the connection from here on): the response searched for
 * secret values (http_exchange.h). */
void egress_conn_splice(egress_conn *c, const char *first, size_t n, int exchange, scrub *sc);
/* Everything for the client went (or the client is gone): the caller may let go. */
int egress_conn_finished(const egress_conn *c);

typedef struct egress_conn_stats {
  long long up, down;
  double ms;
  const char *address, *error, *kind; /* "" when none */
  int exchange;
  unsigned long long dropped; /* bytes past the request, not forwarded */
  size_t replaced;            /* secret values replaced in the response */
} egress_conn_stats;
void egress_conn_stats_get(const egress_conn *c, egress_conn_stats *out);

/* The caller is done with it: it ends (what waits for the window is
 * dropped) and is freed. */
void egress_conn_forget(egress_conn *c);

#endif

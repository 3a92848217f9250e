/* lua_egress: the host's side of a sandbox's egress (issue 19) — the stream of
 * `luagent-supervisor egress` (sandbox/supervisor/DESIGN.md, "Egress"), which
 * relays every connection a sandbox makes to its proxy port, and the upstream
 * connections the host makes for them. Lua decides (luagent.sandbox.egress:
 * rules, requests, trace events); the bytes never pass through Lua strings
 * once a connection is spliced. Wire format: src/core/egress_frames.h.
 *
 *   engine_stream.egress(opts) -> egress | nil, err   opts as engine_stream.supervisor's
 *       (url | unix_socket + path, TLS, connect_timeout, body; timeout: seconds for
 *       the relay to say it listens), ca = true: a per-session CA for TLS termination
 *     egress:accept() -> conn | nil, err         the next connection (kind closed/egress_lost)
 *     egress:head(conn [, seconds [, "proxy" | "origin"]]) -> request | nil, err   the
 *         request head, parsed once in C into its canonical form (src/core/http_head.h;
 *         the table: lua/meta/http_head.lua), its framing kept for splice; the bytes
 *         after it stay for splice. err.kind: closed, timeout, protocol (err.status 400,
 *         431 for a head over 64 KiB however it arrives, 501)
 *     egress:hello(conn [, seconds]) -> sni | false | nil, why   waits for a TLS
 *         ClientHello (kept for splice) and gives its server name (false: none)
 *     egress:reply(conn, bytes [, close])        bytes to the client (through TLS once
 *         terminated); close: then the connection ends
 *     egress:connect(conn, {host, port, tls, pin, policy, need_rule, ca_file, timeout})
 *         -> address | nil, err     the upstream connection to a canonical host (a
 *         text that is not one raises: libcurl never parses request text); pin: the
 *         address to connect to instead of resolving; policy: {{cidr, allow, ports}}
 *         checked for each address before a socket opens (src/core/netaddr.h);
 *         err.kind: denied (the check refused every address), connect, tls
 *     egress:terminate(conn, host) -> true | nil, err   TLS with the client ends here,
 *         with a certificate for host signed by the session CA; head() then reads
 *         the plaintext
 *     egress:splice(conn [, first [, {exchange = true, scrub = {{value, placeholder}...}}]])
 *         -> {up, down, ms, error, kind, dropped, replaced}   first, then what the client
 *         sent, go upstream; both ways until either side ends. With exchange: one
 *         request (its body as head() framed it) and its response
 *         (src/core/http_exchange.h): bytes past the request are dropped (counted in
 *         dropped), the connection ends with the response; with scrub as well, every
 *         value in the response is replaced by its placeholder (replaced counts them)
 *     egress:forget(conn)        frees a connection the host is done with
 *     egress:limit{max_bytes = n}  bytes both ways over every connection; passing it
 *         ends the connections that carry bytes (kind "max_bytes")
 *     egress:counters() -> {connections, open, bytes_up, bytes_down}
 *     egress:ca_pem() -> the session CA's certificate (never its key)
 *     egress:alive() -> true | false, reason
 *     egress:close()   ends every connection and the relay (also <close>, __gc) */
#include <arpa/inet.h>
#include <lauxlib.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_frames.h"
#include "host.h"
#include "http_exchange.h"
#include "http_head.h"
#include "lua_docker_wire.h"
#include "lua_engine_stream.h"
#include "lua_errors.h"
#include "lua_http_head.h"
#include "lua_util.h"
#include "mitm.h"
#include "netaddr.h"
#include "rawconn.h"
#include "sched.h"

/* One D message carries at most this much: a long read is cut in pieces. */
#define MAX_PIECE 65536

typedef struct egress egress;
typedef struct eg_wait eg_wait;

typedef struct eg_conn {
  egress *eg;
  long long id;
  struct eg_conn *next;
  int accepted;    /* accept() gave it out */
  buf in;          /* what the client sent (plaintext once TLS ends here), not yet passed on */
  size_t owed;     /* the client's bytes taken and not yet credited back (K) */
  size_t unacked;  /* bytes sent to the client the relay has not written yet */
  buf outq;        /* bytes for the client waiting for the relay's window (never past it) */
  int want_h, h_sent, want_close, c_sent; /* H and C go only after every byte before them */
  int client_eof, gone, up_eof, connecting, connected, splicing, done;
  size_t head_scanned; /* how far head() looked for the end of a head */
  int head_kind;       /* HTTP_PROXY_REQUEST or HTTP_ORIGIN_REQUEST: what head() reads */
  http_exchange_opts request; /* the framing head() found, for splice's exchange */
  char method[24];
  http_exchange *hx;   /* splice with exchange: one request, its response */
  mitm_tls *tls;
  rawconn *up;
  net_rule *policy;
  size_t npolicy;
  int need_rule;
  long long bytes_up, bytes_down;
  double started;
  char kind[24];
  char error[600];
  eg_wait *waiter;
} eg_conn;

struct eg_wait {
  wait_slot slot;
  loop_timer timer;
  loop *lp;
  eg_conn *conn; /* NULL for accept, or once the connection let go of it */
  egress *eg;
  double deadline; /* loop_now() seconds; < 0: none */
  int timed_out;
};

struct egress {
  luagent_handle handle;
  docker_attach *attach;
  eg_parser parser;
  loop *lp;
  int ready, ended;
  char reason[512];
  char open_error[24];
  int attached;
  wait_slot ready_slot;
  loop_timer ready_timer;
  eg_conn *conns;
  eg_wait *accept_waiter;
  mitm_ca *ca;
  long long max_bytes, bytes_up, bytes_down, connections;
  capped_output diagnostics;
};

static const char WAIT_CLASS[] = "luagent.engine_stream.egress_wait";

static int egress_close(lua_State *L);
static int egress_tostring(lua_State *L);

/* ---- messages to the relay ---- */

static void send_msg(egress *eg, char kind, long long id, const void *data, size_t n) {
  if (eg->ended || !eg->attach) return;
  buf b = BUF_INIT;
  if (eg_encode(&b, kind, id, data, n) == 0) docker_attach_write(eg->attach, b.data, b.len);
  buf_free(&b);
}

static void wake_conn(eg_conn *c);

/* Sends what the window allows of the bytes waiting for the client, then the
 * H or C asked for once nothing waits. The relay ends a host that sends past
 * the window, so nothing ever does. */
static void drain_client(eg_conn *c) {
  while (c->outq.len && c->unacked < EGRESS_WINDOW && !c->gone) {
    size_t piece = c->outq.len < MAX_PIECE ? c->outq.len : MAX_PIECE;
    if (piece > EGRESS_WINDOW - c->unacked) piece = EGRESS_WINDOW - c->unacked;
    send_msg(c->eg, 'D', c->id, c->outq.data, piece);
    c->unacked += piece;
    buf_consume(&c->outq, piece);
  }
  if (c->outq.len && !c->gone) return;
  if (c->want_h && !c->h_sent && !c->gone) {
    c->h_sent = 1;
    send_msg(c->eg, 'H', c->id, NULL, 0);
  }
  if (c->want_close && !c->c_sent) {
    c->c_sent = 1;
    if (!c->gone) send_msg(c->eg, 'C', c->id, NULL, 0);
    wake_conn(c);
  }
}

static void to_client(eg_conn *c, const char *data, size_t n) {
  if (c->gone || c->c_sent) return;
  buf_append(&c->outq, data, n);
  drain_client(c);
}

/* Everything for the client went (or the client is gone): the host may let go. */
static int finished(const eg_conn *c) { return c->done && (c->c_sent || c->gone); }

/* Ciphertext TLS has for the client. */
static void flush_tls(eg_conn *c) {
  buf out = BUF_INIT;
  mitm_tls_take(c->tls, &out);
  if (out.len) to_client(c, out.data, out.len);
  buf_free(&out);
}

/* The client's bytes that went on are credited back, unless upstream is slow. */
static void settle_credit(eg_conn *c) {
  if (!c->owed || !c->splicing || c->done) return;
  if (c->up && rawconn_pending(c->up) >= EGRESS_WINDOW) return;
  send_msg(c->eg, 'K', c->id, NULL, c->owed);
  c->owed = 0;
}

/* ---- waits ---- */

static void wake(eg_wait *w) {
  if (!w) return;
  loop_timer_stop(w->lp, &w->timer);
  wait_slot_complete(&w->slot);
}

static void wait_timer(loop_timer *t) {
  eg_wait *w = (eg_wait *)((char *)t - offsetof(eg_wait, timer));
  w->timed_out = 1;
  wait_slot_complete(&w->slot);
}

static void wait_cancel(wait_slot *slot) {
  eg_wait *w = (eg_wait *)((char *)slot - offsetof(eg_wait, slot));
  loop_timer_stop(w->lp, &w->timer);
}

static void wait_finish(eg_wait *w) {
  loop_timer_stop(w->lp, &w->timer);
  if (w->conn && w->conn->waiter == w) w->conn->waiter = NULL;
  if (!w->conn && w->eg && w->eg->accept_waiter == w) w->eg->accept_waiter = NULL;
  w->conn = NULL;
  w->eg = NULL;
}

static int wait_gc(lua_State *L) {
  wait_finish(luaL_checkudata(L, 1, WAIT_CLASS));
  return 0;
}

/* A wait on the stack of the calling task, for conn (NULL: accept). */
static eg_wait *new_wait(lua_State *L, egress *eg, eg_conn *c, double seconds) {
  eg_wait *w = lua_newuserdatauv(L, sizeof *w, 0);
  memset(w, 0, sizeof *w);
  luaL_setmetatable(L, WAIT_CLASS);
  w->lp = eg->lp;
  w->eg = eg;
  w->conn = c;
  loop_timer_init(&w->timer, wait_timer);
  wait_slot_init(&w->slot, wait_cancel);
  if (c) c->waiter = w;
  else eg->accept_waiter = w;
  w->deadline = seconds >= 0 ? loop_now() + seconds : -1;
  if (seconds >= 0) loop_timer_start(eg->lp, &w->timer, seconds);
  return w;
}

/* Waits again on the same wait: woken by bytes that were not yet enough. */
static int wait_again(lua_State *L, eg_wait *w, lua_KFunction k) {
  wait_slot_init(&w->slot, wait_cancel);
  if (w->deadline >= 0) {
    double left = w->deadline - loop_now();
    loop_timer_start(w->lp, &w->timer, left > 0 ? left : 0);
  }
  return sched_await(L, &w->slot, (lua_KContext)w, k);
}

/* A cancelled wait lets go of its connection before the error is raised. */
static void check_cancelled(lua_State *L, eg_wait *w) {
  if (!w->slot.cancelled) return;
  wait_finish(w);
  sched_check_cancelled(L, &w->slot);
}

/* ---- connections ---- */

static eg_conn *find_conn(egress *eg, long long id) {
  for (eg_conn *c = eg->conns; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

/* The connection is over (for the client too): why, when it failed. */
static void end_conn(eg_conn *c, const char *kind, const char *why) {
  if (c->done) return;
  c->done = 1;
  if (kind && !c->kind[0]) snprintf(c->kind, sizeof c->kind, "%s", kind);
  if (why && why[0] && !c->error[0]) snprintf(c->error, sizeof c->error, "%s", why);
  if (c->tls) {
    mitm_tls_shutdown(c->tls);
    flush_tls(c);
  }
  c->want_close = 1;
  drain_client(c);
  if (c->up && (c->connecting || rawconn_open(c->up))) {
    c->connecting = 0;
    rawconn_end(c->up, NULL, "");
  }
  if (c->waiter) wake(c->waiter);
}

static void wake_conn(eg_conn *c) {
  if (c->waiter) wake(c->waiter);
}

static void free_conn(eg_conn *c) {
  if (c->waiter) {
    c->waiter->conn = NULL;
    wake(c->waiter);
  }
  rawconn_free(c->up);
  http_exchange_free(c->hx);
  if (c->tls) mitm_tls_free(c->tls);
  buf_free(&c->in);
  buf_free(&c->outq);
  free(c->policy);
  free(c);
}

static void unlink_conn(egress *eg, eg_conn *c) {
  eg_conn **link = &eg->conns;
  while (*link && *link != c) link = &(*link)->next;
  if (*link) *link = c->next;
}

/* Bytes counted against the egress's max_bytes; 0 when the limit was passed. */
static int count_bytes(eg_conn *c, size_t n, int upward) {
  egress *eg = c->eg;
  if (upward) c->bytes_up += (long long)n, eg->bytes_up += (long long)n;
  else c->bytes_down += (long long)n, eg->bytes_down += (long long)n;
  if (!eg->max_bytes || eg->bytes_up + eg->bytes_down <= eg->max_bytes) return 1;
  char why[200];
  snprintf(why, sizeof why, "network.max_bytes (%lld bytes, both ways, every connection) was reached", eg->max_bytes);
  end_conn(c, "max_bytes", why);
  return 0;
}

/* ---- upstream ---- */

static void up_connected(void *ctx) {
  eg_conn *c = ctx;
  c->connecting = 0;
  c->connected = 1;
  if (c->waiter) wake(c->waiter);
}

/* Bytes for the client: through TLS when it ends here. */
static void give_client(eg_conn *c, const char *data, size_t n) {
  if (c->tls) {
    mitm_tls_write(c->tls, data, n);
    flush_tls(c);
  } else {
    to_client(c, data, n);
  }
}

/* The upstream ended its side of an exchange: what the exchange still holds
 * goes to the client, and the connection ends. */
static void exchange_ended(eg_conn *c) {
  buf down = BUF_INIT;
  int complete = http_exchange_upstream_end(c->hx, &down);
  if (down.len) give_client(c, down.data, down.len);
  buf_free(&down);
  end_conn(c, complete ? NULL : "network", complete ? NULL : http_exchange_why(c->hx));
}

static void up_ended(eg_conn *c) {
  c->up_eof = 1;
  if (c->hx) {
    exchange_ended(c);
    return;
  }
  if (c->tls || c->client_eof) {
    end_conn(c, NULL, NULL);
    return;
  }
  c->want_h = 1;
  drain_client(c);
}

static int up_data(void *ctx, const char *data, size_t n) {
  eg_conn *c = ctx;
  if (c->done) return -1;
  if (n == 0) {
    up_ended(c);
    return -1;
  }
  if (!count_bytes(c, n, 0)) return -1;
  if (!c->hx) {
    give_client(c, data, n);
  } else {
    buf down = BUF_INIT;
    int rc = http_exchange_upstream(c->hx, data, n, &down);
    if (down.len) give_client(c, down.data, down.len);
    buf_free(&down);
    if (rc != 0) { /* the response is complete (the upstream may not close), or refused */
      end_conn(c, rc < 0 ? "refused" : NULL, rc < 0 ? http_exchange_why(c->hx) : NULL);
      return -1;
    }
  }
  if (c->outq.len) rawconn_pause(c->up, 1); /* the window is full: upstream waits */
  return 0;
}

static void up_closed(void *ctx, const char *kind, const char *why) {
  eg_conn *c = ctx;
  if (c->done) return;
  if (c->connecting) {
    c->connecting = 0;
    snprintf(c->kind, sizeof c->kind, "%s", kind ? kind : "connect");
    snprintf(c->error, sizeof c->error, "%s", why);
    if (c->waiter) wake(c->waiter);
    return;
  }
  end_conn(c, kind ? kind : "network", why);
}

static void up_drained(void *ctx) { settle_credit(ctx); }

static const rawconn_callbacks UP_CALLBACKS = {up_connected, up_data, up_closed, up_drained};

static int port_of(const struct sockaddr *address) {
  if (address->sa_family == AF_INET) return ntohs(((const struct sockaddr_in *)address)->sin_port);
  if (address->sa_family == AF_INET6) return ntohs(((const struct sockaddr_in6 *)address)->sin6_port);
  return 0;
}

static int vet_address(void *ctx, const struct sockaddr *address, char *why, size_t whylen) {
  eg_conn *c = ctx;
  return net_policy_check(c->policy, c->npolicy, address, port_of(address), c->need_rule, why, whylen);
}

static void on_client_eof(eg_conn *c);

/* The client's plaintext, spliced: as it is, or one request's worth of it. */
static void upward(eg_conn *c, const char *data, size_t n) {
  if (!c->hx) {
    if (count_bytes(c, n, 1)) rawconn_write(c->up, data, n);
    return;
  }
  buf up = BUF_INIT;
  if (http_exchange_client(c->hx, data, n, &up) < 0) end_conn(c, "protocol", http_exchange_why(c->hx));
  else if (up.len && count_bytes(c, up.len, 1)) rawconn_write(c->up, up.data, up.len);
  buf_free(&up);
}

/* Bytes the client sent while spliced: on, through TLS when it ends here. */
static void client_bytes(eg_conn *c, const char *data, size_t n) {
  if (!c->tls) {
    upward(c, data, n);
    return;
  }
  buf plain = BUF_INIT;
  int rc = mitm_tls_feed(c->tls, data, n, &plain);
  flush_tls(c);
  if (rc != 0) {
    char why[400];
    snprintf(why, sizeof why, "TLS with the sandbox's client failed: %s", mitm_tls_error(c->tls));
    end_conn(c, "tls", why);
  } else if (plain.len) {
    upward(c, plain.data, plain.len);
  }
  buf_free(&plain);
  if (!c->done && mitm_tls_peer_closed(c->tls)) on_client_eof(c); /* its close_notify */
}

/* ---- what the relay says ---- */

static void on_accepted(egress *eg, long long id) {
  eg_conn *c = calloc(1, sizeof *c);
  if (!c) {
    send_msg(eg, 'C', id, NULL, 0);
    return;
  }
  c->eg = eg;
  c->id = id;
  c->started = loop_now();
  c->next = eg->conns;
  eg->conns = c;
  eg->connections++;
  if (eg->accept_waiter) wake(eg->accept_waiter);
}

static void on_client_data(eg_conn *c, const char *data, size_t n) {
  c->owed += n;
  if (c->splicing) {
    client_bytes(c, data, n);
    settle_credit(c);
    return;
  }
  if (!c->tls) {
    buf_append(&c->in, data, n);
  } else if (mitm_tls_feed(c->tls, data, n, &c->in) != 0) {
    char why[400];
    snprintf(why, sizeof why, "TLS with the sandbox's client failed: %s", mitm_tls_error(c->tls));
    flush_tls(c);
    end_conn(c, "tls", why);
    return;
  } else {
    flush_tls(c);
  }
  if (c->waiter) wake(c->waiter);
}

static void on_client_eof(eg_conn *c) {
  c->client_eof = 1;
  if (c->splicing && c->hx && !http_exchange_request_complete(c->hx))
    end_conn(c, "protocol", "the client ended before its request's body did");
  /* a tunnel's end goes on; an exchange's request was whole: the upstream answers it */
  if (c->splicing && c->up && !c->tls && !c->hx) rawconn_shutdown(c->up);
  if (c->splicing && c->up_eof) end_conn(c, NULL, NULL);
  if (c->waiter) wake(c->waiter);
}

static void on_credit(eg_conn *c, size_t n) {
  c->unacked = n < c->unacked ? c->unacked - n : 0;
  drain_client(c);
  if (c->up && !c->outq.len && !c->done) rawconn_pause(c->up, 0);
}

static void egress_ended(egress *eg, const char *why);

static int on_message(void *ctx, char kind, long long id, const char *data, size_t n) {
  egress *eg = ctx;
  if (kind == 'R') {
    eg->ready = 1;
    wait_slot_complete(&eg->ready_slot);
    return 0;
  }
  if (kind == 'A') {
    on_accepted(eg, id);
    return 0;
  }
  eg_conn *c = find_conn(eg, id);
  if (!c) return 0; /* forgotten meanwhile */
  if (kind == 'D' && !c->done) on_client_data(c, data, n);
  else if (kind == 'H') on_client_eof(c);
  else if (kind == 'K') on_credit(c, n);
  else if (kind == 'C') {
    c->gone = 1;
    end_conn(c, NULL, NULL);
    wake_conn(c);
  } else if (kind != 'D') {
    return -1;
  }
  return 0;
}

/* The relay is gone: every waiter wakes and finds out. */
static void egress_ended(egress *eg, const char *why) {
  if (eg->ended) return;
  eg->ended = 1;
  snprintf(eg->reason, sizeof eg->reason, "%s", why ? why : "its stream ended");
  loop_timer_stop(eg->lp, &eg->ready_timer);
  wait_slot_complete(&eg->ready_slot);
  if (eg->accept_waiter) wake(eg->accept_waiter);
  for (eg_conn *c = eg->conns; c; c = c->next) {
    c->gone = 1;
    end_conn(c, "egress_lost", "the sandbox's egress relay is gone");
  }
}

static void attach_open(void *ctx) { ((egress *)ctx)->attached = 1; }

static int attach_data(void *ctx, int stream, const char *data, size_t n) {
  egress *eg = ctx;
  if (stream == DOCKER_STDERR) return capped_write(&eg->diagnostics, data, n);
  if (eg_feed(&eg->parser, data, n, on_message, eg) != 0) {
    char why[300];
    snprintf(why, sizeof why, "the egress relay said something outside its protocol: %.200s",
             eg->parser.error);
    egress_ended(eg, why);
    return -1;
  }
  return 0;
}

static void attach_close(void *ctx, const char *kind, const char *why) {
  egress *eg = ctx;
  if (kind && !eg->attached) snprintf(eg->open_error, sizeof eg->open_error, "%s", kind);
  egress_ended(eg, why);
}

static const attach_callbacks ATTACH_CALLBACKS = {attach_open, attach_data, attach_close};

/* ---- the handle ---- */

static int l_accept(lua_State *L);
static int l_head(lua_State *L);
static int l_hello(lua_State *L);
static int l_reply(lua_State *L);
static int l_connect(lua_State *L);
static int l_terminate(lua_State *L);
static int l_splice(lua_State *L);
static int l_forget(lua_State *L);
static int l_limit(lua_State *L);
static int l_counters(lua_State *L);
static int l_ca_pem(lua_State *L);
static int l_alive(lua_State *L);

static const luaL_Reg EGRESS_METHODS[] = {
    {"accept", l_accept}, {"head", l_head},       {"hello", l_hello},     {"reply", l_reply},
    {"connect", l_connect}, {"terminate", l_terminate}, {"splice", l_splice}, {"forget", l_forget},
    {"limit", l_limit},   {"counters", l_counters}, {"ca_pem", l_ca_pem}, {"alive", l_alive},
    {NULL, NULL}};
static const luagent_handle_class EGRESS = {"luagent.engine_stream.egress", "sandbox egress", EGRESS_METHODS,
                                            egress_close, egress_tostring};

static int egress_close(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  if (!luagent_handle_release(eg)) return 0;
  egress_ended(eg, "closed by the host");
  docker_attach_free(eg->attach);
  eg->attach = NULL;
  while (eg->conns) {
    eg_conn *c = eg->conns;
    eg->conns = c->next;
    free_conn(c);
  }
  if (eg->ca) mitm_ca_free(eg->ca);
  eg->ca = NULL;
  eg_parser_free(&eg->parser);
  capped_free(&eg->diagnostics);
  return 0;
}

static int egress_tostring(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  lua_pushfstring(L, "%s (%s)", EGRESS.what, eg->handle.closed ? "closed" : eg->ended ? "ended" : "open");
  return 1;
}

static int lost(lua_State *L, egress *eg) {
  return luagent_fail(L, "egress_lost", "the sandbox's egress relay is gone: %s", eg->reason);
}

static eg_conn *check_conn(lua_State *L, egress *eg, int idx) {
  eg_conn *c = find_conn(eg, luaL_checkinteger(L, idx));
  luaL_argcheck(L, c != NULL, idx, "no such connection");
  if (c->waiter) luaL_error(L, "connection %d: another task is already waiting for it", (int)c->id);
  return c;
}

static void ready_timeout(loop_timer *t) {
  egress *eg = (egress *)((char *)t - offsetof(egress, ready_timer));
  if (!eg->ready) egress_ended(eg, "it did not say it was listening in time");
}

static int open_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  egress *eg = (egress *)ctx;
  sched_check_cancelled(L, &eg->ready_slot);
  luagent_check_open(L, 2, &EGRESS);
  loop_timer_stop(eg->lp, &eg->ready_timer);
  if (!eg->ready) {
    buf diag = BUF_INIT;
    capped_result(&eg->diagnostics, &diag);
    luagent_fail(L, eg->open_error[0] ? eg->open_error : "egress_lost",
                 "the sandbox's egress relay did not start: %s%s%.300s", eg->reason, diag.len ? "; it said: " : "",
                 diag.data ? diag.data : "");
    buf_free(&diag);
    return 2;
  }
  lua_settop(L, 2);
  return 1;
}

/* engine_stream.egress(opts) -> egress | nil, err */
int legress_open(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *body = opt_string(L, 1, "body", "{\"Detach\":false,\"Tty\":false}", NULL);
  attach_target target = lwire_attach_target(L);
  int made_url = lua_gettop(L) > 1;
  int want_ca = opt_boolean(L, 1, "ca", 0);
  egress *eg = luagent_new_handle(L, &EGRESS, sizeof *eg, 0);
  eg->lp = host_of(L)->loop;
  eg_parser_init(&eg->parser);
  capped_init(&eg->diagnostics, 65536);
  wait_slot_init(&eg->ready_slot, NULL);
  loop_timer_init(&eg->ready_timer, ready_timeout);
  char err[512];
  if (want_ca && !(eg->ca = mitm_ca_new("luagent sandbox session CA", err, sizeof err)))
    return luagent_fail(L, "tls", "cannot make the session's certificate authority: %s", err);
  eg->attach = docker_attach_start(eg->lp, &target, body, &ATTACH_CALLBACKS, eg, err, sizeof err);
  if (made_url) lua_remove(L, 2);
  if (!eg->attach) return luagent_fail(L, "config", "%s", err);
  loop_timer_start(eg->lp, &eg->ready_timer, opt_number(L, 1, "timeout", 15));
  luagent_handle_open(eg);
  return sched_await(L, &eg->ready_slot, (lua_KContext)eg, open_k);
}

/* ---- accept ---- */

static eg_conn *next_unaccepted(egress *eg) {
  eg_conn *found = NULL;
  for (eg_conn *c = eg->conns; c; c = c->next)
    if (!c->accepted && (!found || c->id < found->id)) found = c;
  return found;
}

static int accept_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  check_cancelled(L, w);
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  if (eg->handle.closed) {
    wait_finish(w);
    return luagent_fail(L, "closed", "the sandbox's egress was closed");
  }
  eg_conn *c = next_unaccepted(eg);
  if (!c && !eg->ended) return wait_again(L, w, accept_k);
  wait_finish(w);
  if (!c) return lost(L, eg);
  c->accepted = 1;
  lua_pushinteger(L, c->id);
  return 1;
}

static int l_accept(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  if (eg->accept_waiter) return luaL_error(L, "another task is already accepting connections");
  lua_settop(L, 1);
  eg_wait *w = new_wait(L, eg, NULL, -1);
  if (next_unaccepted(eg) || eg->ended) return accept_k(L, LUA_OK, (lua_KContext)w);
  return sched_await(L, &w->slot, (lua_KContext)w, accept_k);
}

/* ---- waiting for what the client sends ---- */

typedef int (*conn_ready_fn)(lua_State *L, eg_conn *c); /* pushes results (> 0), or 0: not yet */

static int wait_conn_k(lua_State *L, int status, lua_KContext ctx);

/* Waits until ready(L, c) answers; "closed" once the client cannot send
 * more, "timeout" after seconds. The function is the upvalue of the k. */
static int wait_for(lua_State *L, egress *eg, eg_conn *c, double seconds, lua_CFunction ready) {
  lua_settop(L, 2);
  lua_pushcfunction(L, ready); /* 3 */
  eg_wait *w = new_wait(L, eg, c, seconds); /* 4 */
  return wait_conn_k(L, LUA_OK, (lua_KContext)w);
}

static int wait_conn_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  check_cancelled(L, w);
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  eg_conn *c = w->conn;
  if (eg->handle.closed || !c) {
    wait_finish(w);
    return luagent_fail(L, "closed", "the connection was closed while waiting");
  }
  lua_pushvalue(L, 3);
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, LUA_MULTRET); /* ready(egress, conn) -> results, or nothing */
  int n = lua_gettop(L) - 4;
  if (n > 0) {
    wait_finish(w);
    return n;
  }
  if (c->done || c->client_eof) {
    wait_finish(w);
    return luagent_fail(L, "closed", "%s", c->error[0] ? c->error : "the client closed the connection");
  }
  if (w->timed_out) {
    wait_finish(w);
    return luagent_fail(L, "timeout", "nothing whole came in time");
  }
  return wait_again(L, w, wait_conn_k);
}

/* The request head, once its end is there: parsed (the framing kept for
 * splice), and taken off what the client sent. The end is looked for only in
 * what came since the last look, and never past HTTP_HEAD_MAX: a head costs
 * time linear in its length however it arrives. */
static int head_ready(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  eg_conn *c = find_conn(eg, luaL_checkinteger(L, 2));
  long end = http_head_end(c->in.data ? c->in.data : "", c->in.len, &c->head_scanned);
  if (end == 0) return 0;
  if (end < 0) return lhttp_fail(L, 431, "a request head longer than 64 KiB");
  http_message m;
  int status;
  const char *why = NULL;
  int rc = http_request_parse(c->in.data, (size_t)end, c->head_kind, &m, &status, &why);
  if (rc < 0) {
    rc = lhttp_fail(L, status, why);
    http_message_free(&m);
    return rc;
  }
  lhttp_push_request(L, &m);
  snprintf(c->method, sizeof c->method, "%s", m.method);
  c->request = (http_exchange_opts){m.body, m.length, c->method, m.minor, NULL};
  http_message_free(&m);
  buf_consume(&c->in, (size_t)end);
  c->head_scanned = 0;
  return 1;
}

static int l_head(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  eg_conn *c = check_conn(L, eg, 2);
  static const char *const kinds[] = {"proxy", "origin", NULL};
  c->head_kind = luaL_checkoption(L, 4, "proxy", kinds) == 0 ? HTTP_PROXY_REQUEST : HTTP_ORIGIN_REQUEST;
  c->head_scanned = 0;
  return wait_for(L, eg, c, luaL_optnumber(L, 3, 30), head_ready);
}

static int hello_ready(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  eg_conn *c = find_conn(eg, luaL_checkinteger(L, 2));
  char name[256];
  const char *why = NULL;
  int rc = tls_hello_sni(c->in.data ? c->in.data : "", c->in.len, name, sizeof name, &why);
  if (rc == 0) return 0;
  if (rc == 1) lua_pushstring(L, name);
  else if (rc == 2) lua_pushboolean(L, 0);
  if (rc > 0) return 1;
  return luagent_fail(L, "protocol", "not a TLS ClientHello: %s", why ? why : "?");
}

static int l_hello(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  eg_conn *c = check_conn(L, eg, 2);
  return wait_for(L, eg, c, luaL_optnumber(L, 3, 30), hello_ready);
}

/* ---- answering, connecting, splicing ---- */

static int l_reply(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  eg_conn *c = check_conn(L, eg, 2);
  size_t n;
  const char *data = luaL_checklstring(L, 3, &n);
  if (c->done) return luagent_fail(L, "closed", "the connection is closed");
  if (c->tls) {
    mitm_tls_write(c->tls, data, n);
    flush_tls(c);
  } else {
    to_client(c, data, n);
  }
  if (lua_toboolean(L, 4)) end_conn(c, NULL, NULL);
  lua_pushboolean(L, 1);
  return 1;
}

/* policy: {{cidr, allow, ports}} -> net_rule[] (Lua checked the texts). */
static int read_policy(lua_State *L, int t, eg_conn *c) {
  lua_getfield(L, t, "policy");
  size_t n = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
  c->policy = n ? calloc(n, sizeof *c->policy) : NULL;
  if (n && !c->policy) return -1;
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i + 1);
    net_rule *r = &c->policy[c->npolicy];
    const char *why = NULL;
    const char *cidr = opt_string(L, -1, "cidr", "", NULL);
    if (net_cidr_parse(cidr, &r->cidr, &why) != 0) return luaL_error(L, "policy[%d]: %s: %s", (int)i + 1, cidr, why);
    r->allow = opt_boolean(L, -1, "allow", 0);
    lua_getfield(L, -1, "ports");
    for (size_t p = 1; lua_istable(L, -1) && p <= lua_rawlen(L, -1) && r->nports < 16; p++) {
      lua_rawgeti(L, -1, (lua_Integer)p);
      r->ports[r->nports++] = (unsigned short)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
    c->npolicy++;
  }
  lua_pop(L, 1);
  return 0;
}

static int connect_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  eg_conn *c = w->conn;
  wait_finish(w);
  sched_check_cancelled(L, &w->slot);
  if (!c) return luagent_fail(L, "closed", "the connection was closed while connecting");
  if (c->connected && !c->done) {
    lua_pushstring(L, rawconn_address(c->up));
    return 1;
  }
  if (c->connecting) { /* the client went away first */
    c->connecting = 0;
    rawconn_end(c->up, NULL, "");
  }
  return luagent_fail(L, c->kind[0] ? c->kind : "closed", "%s", c->error[0] ? c->error : "the client went away");
}

/* The upstream's URL and pin, from a canonical host alone: a text that is
 * not one is a bug in the caller (the host went through http_head). */
static void upstream_target(lua_State *L, char *url, size_t urlcap, char *resolve, size_t rcap) {
  size_t n;
  const char *host = opt_string(L, 3, "host", NULL, &n), *why = NULL;
  int port = (int)opt_integer(L, 3, "port", 0);
  http_host h;
  luaL_argcheck(L, host != NULL && port >= 1 && port <= 65535, 3, "options 'host' and 'port' are required");
  if (http_host_parse(host, n, &h, &why) < 0 || strcmp(h.name, host) != 0)
    luaL_error(L, "egress:connect: %s is not a canonical host", host);
  const char *open = h.family == 6 ? "[" : "", *close = h.family == 6 ? "]" : "";
  snprintf(url, urlcap, "%s://%s%s%s:%d", opt_boolean(L, 3, "tls", 0) ? "https" : "http", open, h.name, close, port);
  resolve[0] = '\0';
  const char *pin = opt_string(L, 3, "pin", NULL, NULL);
  if (!pin) return;
  unsigned char addr[16];
  int v6 = strchr(pin, ':') != NULL;
  if (inet_pton(v6 ? AF_INET6 : AF_INET, pin, addr) != 1) luaL_error(L, "egress:connect: pin %s is not an address", pin);
  snprintf(resolve, rcap, "%s:%d:%s%s%s", h.name, port, v6 ? "[" : "", pin, v6 ? "]" : "");
}

static int l_connect(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  eg_conn *c = check_conn(L, eg, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  luaL_argcheck(L, !c->up, 2, "the connection already has an upstream");
  char url[HTTP_HOST_MAX + 32], resolve[HTTP_HOST_MAX + 80];
  upstream_target(L, url, sizeof url, resolve, sizeof resolve);
  rawconn_target t = {0};
  t.url = url;
  t.resolve = resolve[0] ? resolve : NULL;
  t.ca_file = opt_string(L, 3, "ca_file", NULL, NULL);
  t.connect_timeout = opt_number(L, 3, "timeout", 10);
  t.label = opt_string(L, 3, "label", NULL, NULL);
  c->need_rule = opt_boolean(L, 3, "need_rule", 0);
  if (read_policy(L, 3, c) != 0) return luaL_error(L, "out of memory");
  t.vet = vet_address;
  t.vet_ctx = c;
  t.keepalive = 1;
  char err[512];
  c->connecting = 1;
  c->up = rawconn_start(eg->lp, &t, &UP_CALLBACKS, c, err, sizeof err);
  if (!c->up) {
    c->connecting = 0;
    return luagent_fail(L, "connect", "%s", err);
  }
  lua_settop(L, 2);
  eg_wait *w = new_wait(L, eg, c, -1);
  if (c->connected || !c->connecting || c->done) return connect_k(L, LUA_OK, (lua_KContext)w);
  return sched_await(L, &w->slot, (lua_KContext)w, connect_k);
}

static int l_terminate(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  eg_conn *c = check_conn(L, eg, 2);
  const char *host = luaL_checkstring(L, 3);
  luaL_argcheck(L, eg->ca != NULL, 1, "this egress has no CA (open it with ca = true)");
  luaL_argcheck(L, !c->tls, 2, "TLS already ends here");
  char err[512];
  c->tls = mitm_tls_new(eg->ca, host, err, sizeof err);
  if (!c->tls) return luagent_fail(L, "tls", "cannot terminate TLS for %s: %s", host, err);
  buf hello = c->in; /* what came so far is ciphertext: it goes through TLS */
  c->in = (buf)BUF_INIT;
  int rc = mitm_tls_feed(c->tls, hello.data ? hello.data : "", hello.len, &c->in);
  buf_free(&hello);
  flush_tls(c);
  if (rc != 0) return luagent_fail(L, "tls", "TLS with the sandbox's client failed: %s", mitm_tls_error(c->tls));
  lua_pushboolean(L, 1);
  return 1;
}

static void push_stats(lua_State *L, eg_conn *c) {
  lua_createtable(L, 0, 6);
  lua_pushinteger(L, c->bytes_up);
  lua_setfield(L, -2, "up");
  lua_pushinteger(L, c->bytes_down);
  lua_setfield(L, -2, "down");
  lua_pushinteger(L, (lua_Integer)((loop_now() - c->started) * 1000));
  lua_setfield(L, -2, "ms");
  if (c->up && rawconn_address(c->up)[0]) {
    lua_pushstring(L, rawconn_address(c->up));
    lua_setfield(L, -2, "address");
  }
  if (c->error[0]) {
    lua_pushstring(L, c->error);
    lua_setfield(L, -2, "error");
  }
  if (c->kind[0]) {
    lua_pushstring(L, c->kind);
    lua_setfield(L, -2, "kind");
  }
  if (c->hx) {
    lua_pushinteger(L, (lua_Integer)http_exchange_dropped(c->hx));
    lua_setfield(L, -2, "dropped");
    lua_pushinteger(L, (lua_Integer)http_exchange_replaced(c->hx));
    lua_setfield(L, -2, "replaced");
  }
}

static int splice_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  eg_conn *c = w->conn;
  check_cancelled(L, w);
  if (!c) {
    wait_finish(w);
    return luagent_fail(L, "closed", "the connection was closed while spliced");
  }
  if (!finished(c)) return wait_again(L, w, splice_k);
  wait_finish(w);
  push_stats(L, c);
  return 1;
}

/* opts.scrub: {{value, placeholder}, ...} -> a scrub (NULL when empty). */
static scrub *read_scrub(lua_State *L, int opts) {
  lua_getfield(L, opts, "scrub");
  size_t n = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
  scrub *sc = n ? scrub_new() : NULL;
  for (size_t i = 1; i <= n && sc; i++) {
    lua_rawgeti(L, -1, (lua_Integer)i);
    lua_rawgeti(L, -1, 1);
    lua_rawgeti(L, -2, 2);
    size_t vn, pn;
    const char *value = lua_tolstring(L, -2, &vn), *placeholder = lua_tolstring(L, -1, &pn);
    if (!value || !placeholder || scrub_add(sc, value, vn, placeholder, pn) < 0) {
      scrub_free(sc);
      luaL_error(L, "egress:splice: scrub[%d] must be {value, placeholder} (1 to %d bytes)", (int)i, SCRUB_NEEDLE_MAX);
    }
    lua_pop(L, 3);
  }
  lua_pop(L, 1);
  return sc;
}

static int l_splice(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  eg_conn *c = check_conn(L, eg, 2);
  size_t n = 0;
  const char *first = luaL_optlstring(L, 3, "", &n);
  luaL_argcheck(L, c->up && c->connected, 2, "connect it first");
  if (lua_istable(L, 4) && opt_boolean(L, 4, "exchange", 0) && !c->hx) {
    http_exchange_opts o = c->request;
    o.scrub = read_scrub(L, 4);
    c->hx = http_exchange_new(&o);
    if (!c->hx) {
      scrub_free(o.scrub);
      return luaL_error(L, "out of memory");
    }
  }
  lua_settop(L, 2);
  if (!c->done) {
    if (n && count_bytes(c, n, 1)) rawconn_write(c->up, first, n);
    c->splicing = 1;
    if (!c->done && c->in.len) upward(c, c->in.data, c->in.len);
    buf_clear(&c->in);
    settle_credit(c);
    if (!c->done && c->client_eof) on_client_eof(c);
  }
  eg_wait *w = new_wait(L, eg, c, -1);
  return splice_k(L, LUA_OK, (lua_KContext)w);
}

static int l_forget(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  eg_conn *c = check_conn(L, eg, 2);
  end_conn(c, NULL, NULL);
  if (!finished(c)) { /* what still waits for the window is dropped: the host is done */
    buf_clear(&c->outq);
    drain_client(c);
  }
  unlink_conn(eg, c);
  free_conn(c);
  return 0;
}

static int l_limit(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  luaL_checktype(L, 2, LUA_TTABLE);
  eg->max_bytes = opt_integer(L, 2, "max_bytes", 0);
  return 0;
}

static int l_counters(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  int open = 0;
  for (eg_conn *c = eg->conns; c; c = c->next) open += !c->done;
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, eg->connections);
  lua_setfield(L, -2, "connections");
  lua_pushinteger(L, open);
  lua_setfield(L, -2, "open");
  lua_pushinteger(L, eg->bytes_up);
  lua_setfield(L, -2, "bytes_up");
  lua_pushinteger(L, eg->bytes_down);
  lua_setfield(L, -2, "bytes_down");
  return 1;
}

static int l_ca_pem(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  if (!eg->ca) return 0;
  buf pem = BUF_INIT;
  mitm_ca_pem(eg->ca, &pem);
  lua_pushlstring(L, pem.data ? pem.data : "", pem.len);
  buf_free(&pem);
  return 1;
}

static int l_alive(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  lua_pushboolean(L, !eg->ended);
  if (!eg->ended) return 1;
  lua_pushstring(L, eg->reason);
  return 2;
}

void legress_register(lua_State *L) {
  static const luaL_Reg wait_methods[] = {{"__gc", wait_gc}, {NULL, NULL}};
  luagent_register_handle(L, &EGRESS);
  luagent_new_class(L, WAIT_CLASS, wait_methods);
}

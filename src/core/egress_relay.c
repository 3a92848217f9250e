/* egress_relay: connections of a sandbox's egress relay, and their upstreams
 * (egress_relay.h). */
#include "egress_relay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_wire.h"
#include "egress_frames.h"
#include "http_exchange.h"
#include "mitm.h"
#include "rawconn.h"

/* One D message carries at most this much: a long read is cut in pieces. */
#define MAX_PIECE 65536

struct egress_conn {
  egress_relay *r;
  long long id;
  struct egress_conn *next;
  void *user;
  int accepted;    /* handed out by egress_relay_accept */
  buf in;          /* what the client sent (plaintext once TLS ends here), not yet passed on */
  size_t owed;     /* the client's bytes taken and not yet credited back (K) */
  size_t unacked;  /* bytes sent to the client the relay has not written yet */
  buf outq;        /* bytes for the client waiting for the relay's window (never past it) */
  int want_h, h_sent, want_close, c_sent; /* H and C go only after every byte before them */
  int client_eof, gone, up_eof, connecting, connected, splicing, done;
  size_t head_scanned;        /* how far the last look for a head's end went */
  http_exchange_opts request; /* the framing the head declared, for an exchange */
  char method[24];
  http_exchange *hx;          /* splice as an exchange: one request, its response */
  mitm_tls *tls;
  rawconn *up;
  net_rule *policy;
  size_t npolicy;
  int need_rule;
  long long bytes_up, bytes_down;
  double started;
  char kind[24];
  char error[600];
};

struct egress_relay {
  docker_attach *attach;
  eg_parser parser;
  loop *lp;
  int ready, ended, attached;
  char reason[512];
  char open_error[24];
  egress_conn *conns;
  mitm_ca *ca;
  long long max_bytes, bytes_up, bytes_down, connections;
  capped_output diagnostics;
  egress_relay_hooks hooks;
  void *ctx;
  int freeing; /* no hook runs while it is freed */
};

/* ---- telling the caller ---- */

static void changed(egress_conn *c) {
  if (!c->r->freeing && c->r->hooks.conn_changed) c->r->hooks.conn_changed(c->r->ctx, c, 0);
}
static void relay_changed(egress_relay *r) {
  if (!r->freeing && r->hooks.relay_changed) r->hooks.relay_changed(r->ctx);
}

/* ---- messages to the relay ---- */

static void send_msg(egress_relay *r, char kind, long long id, const void *data, size_t n) {
  if (r->ended || (!r->attach && !r->hooks.write)) return;
  buf b = BUF_INIT;
  if (eg_encode(&b, kind, id, data, n) == 0) {
    if (r->attach) docker_attach_write(r->attach, b.data, b.len);
    else r->hooks.write(r->ctx, b.data, b.len);
  }
  buf_free(&b);
}

/* Sends what the window allows of the bytes waiting for the client, then the
 * H or C asked for once nothing waits. The relay ends a host that sends past
 * the window, so nothing ever does. */
static void drain_client(egress_conn *c) {
  while (c->outq.len && c->unacked < EGRESS_WINDOW && !c->gone) {
    size_t piece = c->outq.len < MAX_PIECE ? c->outq.len : MAX_PIECE;
    if (piece > EGRESS_WINDOW - c->unacked) piece = EGRESS_WINDOW - c->unacked;
    send_msg(c->r, 'D', c->id, c->outq.data, piece);
    c->unacked += piece;
    buf_consume(&c->outq, piece);
  }
  if (c->outq.len && !c->gone) return;
  if (c->want_h && !c->h_sent && !c->gone) {
    c->h_sent = 1;
    send_msg(c->r, 'H', c->id, NULL, 0);
  }
  if (c->want_close && !c->c_sent) {
    c->c_sent = 1;
    if (!c->gone) send_msg(c->r, 'C', c->id, NULL, 0);
    changed(c);
  }
}

static void to_client(egress_conn *c, const char *data, size_t n) {
  if (c->gone || c->c_sent) return;
  buf_append(&c->outq, data, n);
  drain_client(c);
}

/* Ciphertext TLS has for the client. */
static void flush_tls(egress_conn *c) {
  buf out = BUF_INIT;
  mitm_tls_take(c->tls, &out);
  if (out.len) to_client(c, out.data, out.len);
  buf_free(&out);
}

/* Bytes for the client: through TLS when it ends here. */
static void give_client(egress_conn *c, const char *data, size_t n) {
  if (c->tls) {
    mitm_tls_write(c->tls, data, n);
    flush_tls(c);
  } else {
    to_client(c, data, n);
  }
}

/* The client's bytes that went on are credited back, unless upstream is slow. */
static void settle_credit(egress_conn *c) {
  if (!c->owed || !c->splicing || c->done) return;
  if (c->up && rawconn_pending(c->up) >= EGRESS_WINDOW) return;
  send_msg(c->r, 'K', c->id, NULL, c->owed);
  c->owed = 0;
}

/* ---- a connection's end ---- */

/* The connection is over (for the client too): why, when it failed. */
static void end_conn(egress_conn *c, const char *kind, const char *why) {
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
  changed(c);
}

static void free_conn(egress_conn *c) {
  if (!c->r->freeing && c->r->hooks.conn_changed) c->r->hooks.conn_changed(c->r->ctx, c, 1);
  rawconn_free(c->up);
  http_exchange_free(c->hx);
  if (c->tls) mitm_tls_free(c->tls);
  buf_free(&c->in);
  buf_free(&c->outq);
  free(c->policy);
  free(c);
}

static void unlink_conn(egress_relay *r, egress_conn *c) {
  egress_conn **link = &r->conns;
  while (*link && *link != c) link = &(*link)->next;
  if (*link) *link = c->next;
}

/* Bytes counted against the relay's max_bytes; 0 when the limit was passed. */
static int count_bytes(egress_conn *c, size_t n, int upward) {
  egress_relay *r = c->r;
  if (upward) c->bytes_up += (long long)n, r->bytes_up += (long long)n;
  else c->bytes_down += (long long)n, r->bytes_down += (long long)n;
  if (!r->max_bytes || r->bytes_up + r->bytes_down <= r->max_bytes) return 1;
  char why[200];
  snprintf(why, sizeof why, "network.max_bytes (%lld bytes, both ways, every connection) was reached", r->max_bytes);
  end_conn(c, "max_bytes", why);
  return 0;
}

/* ---- upstream ---- */

static void up_connected(void *ctx) {
  egress_conn *c = ctx;
  c->connecting = 0;
  c->connected = 1;
  changed(c);
}

/* The upstream ended its side of an exchange: what the exchange still holds
 * goes to the client, and the connection ends. */
static void exchange_ended(egress_conn *c) {
  buf down = BUF_INIT;
  int complete = http_exchange_upstream_end(c->hx, &down);
  if (down.len) give_client(c, down.data, down.len);
  buf_free(&down);
  end_conn(c, complete ? NULL : "network", complete ? NULL : http_exchange_why(c->hx));
}

static void up_ended(egress_conn *c) {
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
  egress_conn *c = ctx;
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
  egress_conn *c = ctx;
  if (c->done) return;
  if (c->connecting) {
    c->connecting = 0;
    snprintf(c->kind, sizeof c->kind, "%s", kind ? kind : "connect");
    snprintf(c->error, sizeof c->error, "%s", why);
    changed(c);
    return;
  }
  end_conn(c, kind ? kind : "network", why);
}

static void up_drained(void *ctx) { settle_credit(ctx); }

static const rawconn_callbacks UP_CALLBACKS = {up_connected, up_data, up_closed, up_drained};

static int vet_address(void *ctx, const struct sockaddr *address, char *why, size_t whylen) {
  egress_conn *c = ctx;
  return net_policy_check(c->policy, c->npolicy, address, net_sockaddr_port(address), c->need_rule, why, whylen);
}

/* ---- the client's bytes ---- */

static void on_client_eof(egress_conn *c);

/* The client's plaintext, spliced: as it is, or one request's worth of it. */
static void upward(egress_conn *c, const char *data, size_t n) {
  if (!c->hx) {
    if (count_bytes(c, n, 1)) rawconn_write(c->up, data, n);
    return;
  }
  buf up = BUF_INIT;
  if (http_exchange_client(c->hx, data, n, &up) < 0) end_conn(c, "protocol", http_exchange_why(c->hx));
  else if (up.len && count_bytes(c, up.len, 1)) rawconn_write(c->up, up.data, up.len);
  buf_free(&up);
}

static void tls_failed(egress_conn *c) {
  char why[400];
  snprintf(why, sizeof why, "TLS with the sandbox's client failed: %s", mitm_tls_error(c->tls));
  end_conn(c, "tls", why);
}

/* Bytes the client sent while spliced: on, through TLS when it ends here. */
static void client_bytes(egress_conn *c, const char *data, size_t n) {
  if (!c->tls) {
    upward(c, data, n);
    return;
  }
  buf plain = BUF_INIT;
  int rc = mitm_tls_feed(c->tls, data, n, &plain);
  flush_tls(c);
  if (rc != 0) tls_failed(c);
  else if (plain.len) upward(c, plain.data, plain.len);
  buf_free(&plain);
  if (!c->done && mitm_tls_peer_closed(c->tls)) on_client_eof(c); /* its close_notify */
}

static void on_client_data(egress_conn *c, const char *data, size_t n) {
  c->owed += n;
  if (c->splicing) {
    client_bytes(c, data, n);
    settle_credit(c);
    return;
  }
  if (!c->tls) {
    buf_append(&c->in, data, n);
  } else if (mitm_tls_feed(c->tls, data, n, &c->in) != 0) {
    flush_tls(c);
    tls_failed(c);
    return;
  } else {
    flush_tls(c);
  }
  changed(c);
}

static void on_client_eof(egress_conn *c) {
  c->client_eof = 1;
  if (c->splicing && c->hx && !http_exchange_request_complete(c->hx))
    end_conn(c, "protocol", "the client ended before its request's body did");
  /* a tunnel's end goes on; an exchange's request was whole: the upstream answers it */
  if (c->splicing && c->up && !c->tls && !c->hx) rawconn_shutdown(c->up);
  if (c->splicing && c->up_eof) end_conn(c, NULL, NULL);
  changed(c);
}

static void on_credit(egress_conn *c, size_t n) {
  c->unacked = n < c->unacked ? c->unacked - n : 0;
  drain_client(c);
  if (c->up && !c->outq.len && !c->done) rawconn_pause(c->up, 0);
}

/* ---- what the relay says ---- */

static void on_accepted(egress_relay *r, long long id) {
  egress_conn *c = calloc(1, sizeof *c);
  if (!c) {
    send_msg(r, 'C', id, NULL, 0);
    return;
  }
  c->r = r;
  c->id = id;
  c->started = loop_now();
  c->next = r->conns;
  r->conns = c;
  r->connections++;
  if (r->hooks.accepted) r->hooks.accepted(r->ctx);
}

static void relay_ended(egress_relay *r, const char *why);

static int on_message(void *ctx, char kind, long long id, const char *data, size_t n) {
  egress_relay *r = ctx;
  if (kind == 'R') {
    r->ready = 1;
    relay_changed(r);
    return 0;
  }
  if (kind == 'A') {
    on_accepted(r, id);
    return 0;
  }
  egress_conn *c = egress_relay_find(r, id);
  if (!c) return 0; /* forgotten meanwhile */
  if (kind == 'D' && !c->done) on_client_data(c, data, n);
  else if (kind == 'H') on_client_eof(c);
  else if (kind == 'K') on_credit(c, n);
  else if (kind == 'C') {
    c->gone = 1;
    end_conn(c, NULL, NULL);
    changed(c);
  } else if (kind != 'D') {
    return -1;
  }
  return 0;
}

/* The relay is gone: every connection ends, and the caller hears of it. */
static void relay_ended(egress_relay *r, const char *why) {
  if (r->ended) return;
  r->ended = 1;
  snprintf(r->reason, sizeof r->reason, "%s", why ? why : "its stream ended");
  for (egress_conn *c = r->conns; c; c = c->next) {
    c->gone = 1;
    end_conn(c, "egress_lost", "the sandbox's egress relay is gone");
  }
  relay_changed(r);
  if (!r->freeing && r->hooks.accepted) r->hooks.accepted(r->ctx);
}

/* ---- the relay's stream ---- */

int egress_relay_input(egress_relay *r, const char *data, size_t n) {
  if (r->ended) return -1;
  if (eg_feed(&r->parser, data, n, on_message, r) != 0) {
    char why[300];
    snprintf(why, sizeof why, "the egress relay said something outside its protocol: %.200s", r->parser.error);
    relay_ended(r, why);
    return -1;
  }
  return 0;
}

void egress_relay_input_stderr(egress_relay *r, const char *data, size_t n) { capped_write(&r->diagnostics, data, n); }

void egress_relay_stream_ended(egress_relay *r, const char *kind, const char *why) {
  if (kind && !r->attached) snprintf(r->open_error, sizeof r->open_error, "%s", kind);
  relay_ended(r, why);
}

static void attach_open(void *ctx) { ((egress_relay *)ctx)->attached = 1; }

static int attach_data(void *ctx, int stream, const char *data, size_t n) {
  if (stream != DOCKER_STDERR) return egress_relay_input(ctx, data, n);
  egress_relay_input_stderr(ctx, data, n);
  return 0;
}

static void attach_close(void *ctx, const char *kind, const char *why) { egress_relay_stream_ended(ctx, kind, why); }

static const attach_callbacks ATTACH_CALLBACKS = {attach_open, attach_data, attach_close};

/* ---- the relay ---- */

egress_relay *egress_relay_new(loop *lp, int want_ca, const egress_relay_hooks *hooks, void *ctx, char *err,
                               size_t errlen) {
  egress_relay *r = calloc(1, sizeof *r);
  if (!r) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  r->lp = lp;
  r->hooks = *hooks;
  r->ctx = ctx;
  r->attached = 1; /* a stream the caller carries is there from the start */
  eg_parser_init(&r->parser);
  capped_init(&r->diagnostics, 65536);
  if (want_ca && !(r->ca = mitm_ca_new("luagent sandbox session CA", err, errlen))) {
    egress_relay_free(r);
    return NULL;
  }
  return r;
}

egress_relay *egress_relay_start(loop *lp, const attach_target *target, const char *body, int want_ca,
                                 const egress_relay_hooks *hooks, void *ctx, char *err, size_t errlen) {
  egress_relay *r = egress_relay_new(lp, want_ca, hooks, ctx, err, errlen);
  if (!r) return NULL;
  r->attached = 0;
  r->attach = docker_attach_start(lp, target, body, &ATTACH_CALLBACKS, r, err, errlen);
  if (!r->attach) {
    egress_relay_free(r);
    return NULL;
  }
  return r;
}

void egress_relay_free(egress_relay *r) {
  if (!r) return;
  r->freeing = 1;
  relay_ended(r, "closed by the host");
  docker_attach_free(r->attach);
  r->attach = NULL;
  while (r->conns) {
    egress_conn *c = r->conns;
    r->conns = c->next;
    free_conn(c);
  }
  if (r->ca) mitm_ca_free(r->ca);
  eg_parser_free(&r->parser);
  capped_free(&r->diagnostics);
  free(r);
}

int egress_relay_ready(const egress_relay *r) { return r->ready; }
int egress_relay_ended(const egress_relay *r, const char **why) {
  if (why) *why = r->reason;
  return r->ended;
}

void egress_relay_end(egress_relay *r, const char *why) { relay_ended(r, why); }
const char *egress_relay_open_error(const egress_relay *r) { return r->open_error; }
void egress_relay_diagnostics(const egress_relay *r, buf *out) { capped_result(&r->diagnostics, out); }

egress_conn *egress_relay_accept(egress_relay *r) {
  egress_conn *found = NULL;
  for (egress_conn *c = r->conns; c; c = c->next)
    if (!c->accepted && (!found || c->id < found->id)) found = c;
  if (found) found->accepted = 1;
  return found;
}

egress_conn *egress_relay_find(egress_relay *r, long long id) {
  for (egress_conn *c = r->conns; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

void egress_relay_limit(egress_relay *r, long long max_bytes) { r->max_bytes = max_bytes; }

void egress_relay_counters(const egress_relay *r, egress_counters *out) {
  memset(out, 0, sizeof *out);
  for (const egress_conn *c = r->conns; c; c = c->next) out->open += !c->done;
  out->connections = r->connections;
  out->bytes_up = r->bytes_up;
  out->bytes_down = r->bytes_down;
}

int egress_relay_ca_pem(const egress_relay *r, buf *out) {
  if (!r->ca) return -1;
  mitm_ca_pem(r->ca, out);
  return 0;
}

/* ---- one connection ---- */

long long egress_conn_id(const egress_conn *c) { return c->id; }
void *egress_conn_user(const egress_conn *c) { return c->user; }
void egress_conn_set_user(egress_conn *c, void *user) { c->user = user; }
int egress_conn_closed(const egress_conn *c, const char **why) {
  if (why) *why = c->error;
  return c->done || c->client_eof;
}

int egress_conn_head(egress_conn *c, int kind, http_message *m, int *status, const char **why) {
  memset(m, 0, sizeof *m); /* freeable whatever the answer */
  long end = http_head_end(c->in.data ? c->in.data : "", c->in.len, &c->head_scanned);
  if (end == 0) return 0;
  if (end < 0) {
    *status = 431, *why = "a request head longer than 64 KiB";
    return -1;
  }
  if (http_request_parse(c->in.data, (size_t)end, kind, m, status, why) < 0) return -1;
  snprintf(c->method, sizeof c->method, "%s", m->method);
  c->request = (http_exchange_opts){m->body, m->length, c->method, m->minor, NULL};
  buf_consume(&c->in, (size_t)end);
  c->head_scanned = 0;
  return 1;
}

int egress_conn_hello(egress_conn *c, char *name, size_t cap, const char **why) {
  return tls_hello_sni(c->in.data ? c->in.data : "", c->in.len, name, cap, why);
}

int egress_conn_reply(egress_conn *c, const char *data, size_t n, int close) {
  if (c->done) return -1;
  give_client(c, data, n);
  if (close) end_conn(c, NULL, NULL);
  return 0;
}

int egress_conn_connect(egress_conn *c, const egress_upstream *u, char *err, size_t errlen) {
  char url[RAWCONN_URL_MAX], resolve[RAWCONN_URL_MAX];
  if (c->up) return snprintf(err, errlen, "the connection already has an upstream"), -1;
  if (rawconn_url(u->host, u->port, u->tls, u->pin, url, resolve, err, errlen) < 0) return -1;
  c->policy = u->npolicy ? calloc(u->npolicy, sizeof *c->policy) : NULL;
  if (u->npolicy && !c->policy) return snprintf(err, errlen, "out of memory"), -1;
  if (u->npolicy) memcpy(c->policy, u->policy, u->npolicy * sizeof *c->policy);
  c->npolicy = u->npolicy;
  c->need_rule = u->need_rule;
  rawconn_target t = {0};
  t.url = url;
  t.resolve = resolve[0] ? resolve : NULL;
  t.tls.ca_file = u->ca_file;
  t.connect_timeout = u->timeout > 0 ? u->timeout : 10;
  t.label = u->label;
  t.vet = vet_address;
  t.vet_ctx = c;
  t.keepalive = 1;
  c->connecting = 1;
  c->up = rawconn_start(c->r->lp, &t, &UP_CALLBACKS, c, err, errlen);
  if (!c->up) c->connecting = 0;
  return c->up ? 0 : -1;
}

int egress_conn_connected(const egress_conn *c, const char **address, const char **kind, const char **why) {
  *address = c->up ? rawconn_address(c->up) : "";
  *kind = c->kind[0] ? c->kind : "closed";
  *why = c->error[0] ? c->error : "the client went away";
  if (c->connected && !c->done) return 1;
  if (c->connecting && !c->done) return 0;
  return -1;
}

int egress_conn_terminate(egress_conn *c, const char *host, char *err, size_t errlen) {
  if (!c->r->ca) return snprintf(err, errlen, "this egress has no CA"), -1;
  if (c->tls) return snprintf(err, errlen, "TLS already ends here"), -1;
  c->tls = mitm_tls_new(c->r->ca, host, err, errlen);
  if (!c->tls) return -1;
  buf hello = c->in; /* what came so far is ciphertext: it goes through TLS */
  c->in = (buf)BUF_INIT;
  int rc = mitm_tls_feed(c->tls, hello.data ? hello.data : "", hello.len, &c->in);
  buf_free(&hello);
  flush_tls(c);
  if (rc != 0) return snprintf(err, errlen, "TLS with the sandbox's client failed: %s", mitm_tls_error(c->tls)), -1;
  return 0;
}

void egress_conn_splice(egress_conn *c, const char *first, size_t n, int exchange, scrub *sc) {
  if (exchange && !c->hx) {
    http_exchange_opts o = c->request;
    o.scrub = sc;
    c->hx = http_exchange_new(&o);
    if (!c->hx) scrub_free(sc), end_conn(c, "network", "out of memory");
  } else {
    scrub_free(sc);
  }
  if (c->done) return;
  if (n && count_bytes(c, n, 1)) rawconn_write(c->up, first, n);
  c->splicing = 1;
  if (!c->done && c->in.len) upward(c, c->in.data, c->in.len);
  buf_clear(&c->in);
  settle_credit(c);
  if (!c->done && c->client_eof) on_client_eof(c);
}

int egress_conn_finished(const egress_conn *c) { return c->done && (c->c_sent || c->gone); }
void egress_conn_stats_get(const egress_conn *c, egress_conn_stats *out) {
  memset(out, 0, sizeof *out);
  out->up = c->bytes_up;
  out->down = c->bytes_down;
  out->ms = (loop_now() - c->started) * 1000;
  out->address = c->up ? rawconn_address(c->up) : "";
  out->error = c->error;
  out->kind = c->kind;
  out->exchange = c->hx != NULL;
  if (c->hx) {
    out->dropped = http_exchange_dropped(c->hx);
    out->replaced = http_exchange_replaced(c->hx);
  }
}

void egress_conn_forget(egress_conn *c) {
  egress_relay *r = c->r;
  end_conn(c, NULL, NULL);
  if (!egress_conn_finished(c)) { /* what still waits for the window is dropped: the caller is done */
    buf_clear(&c->outq);
    drain_client(c);
  }
  unlink_conn(r, c);
  free_conn(c);
}

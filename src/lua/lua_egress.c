/* lua_egress: the Lua face of a sandbox's egress relay, src/core/egress_relay.c
 * (the connections, their upstreams and the splicing are all there, in pure
 * C): a handle, and the waits that make each call yield until the relay says
 * what it waits for happened. Lua decides (luagent.sandbox.egress: rules,
 * requests, trace events); the bytes never pass through Lua strings once a
 * connection is spliced.
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
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_relay.h"
#include "host.h"
#include "lua_docker_wire.h"
#include "lua_engine_stream.h"
#include "lua_errors.h"
#include "lua_http_head.h"
#include "lua_util.h"
#include "sched.h"

typedef struct egress egress;

/* A task waiting for the relay: for one connection, or (conn NULL) to accept. */
typedef struct eg_wait {
  wait_slot slot;
  loop_timer timer;
  loop *lp;
  egress *eg;
  egress_conn *conn; /* NULL for accept, or once the connection is gone */
  double deadline;   /* loop_now() seconds; < 0: none */
  int timed_out;
} eg_wait;

struct egress {
  luagent_handle handle;
  egress_relay *relay;
  loop *lp;
  wait_slot ready_slot;
  loop_timer ready_timer;
  eg_wait *accept_waiter;
};

static const char WAIT_CLASS[] = "luagent.engine_stream.egress_wait";

static int egress_close(lua_State *L);
static int egress_tostring(lua_State *L);

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
  if (w->conn && egress_conn_user(w->conn) == w) egress_conn_set_user(w->conn, NULL);
  if (!w->conn && w->eg && w->eg->accept_waiter == w) w->eg->accept_waiter = NULL;
  w->conn = NULL;
  w->eg = NULL;
}

static int wait_gc(lua_State *L) {
  wait_finish(luaL_checkudata(L, 1, WAIT_CLASS));
  return 0;
}

/* A wait on the stack of the calling task, for conn (NULL: accept). */
static eg_wait *new_wait(lua_State *L, egress *eg, egress_conn *c, double seconds) {
  eg_wait *w = lua_newuserdatauv(L, sizeof *w, 0);
  memset(w, 0, sizeof *w);
  luaL_setmetatable(L, WAIT_CLASS);
  w->lp = eg->lp;
  w->eg = eg;
  w->conn = c;
  loop_timer_init(&w->timer, wait_timer);
  wait_slot_init(&w->slot, wait_cancel);
  if (c) egress_conn_set_user(c, w);
  else eg->accept_waiter = w;
  w->deadline = seconds >= 0 ? loop_now() + seconds : -1;
  if (seconds >= 0) loop_timer_start(eg->lp, &w->timer, seconds);
  return w;
}

/* Waits again on the same wait: woken by something that was not yet enough. */
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

/* ---- what the relay tells ---- */

static void relay_changed(void *ctx) {
  egress *eg = ctx;
  if (egress_relay_ready(eg->relay) || egress_relay_ended(eg->relay, NULL)) {
    loop_timer_stop(eg->lp, &eg->ready_timer);
    wait_slot_complete(&eg->ready_slot);
  }
}

static void accepted(void *ctx) {
  egress *eg = ctx;
  if (eg->accept_waiter) wake(eg->accept_waiter);
}

static void conn_changed(void *ctx, egress_conn *c, int gone) {
  (void)ctx;
  eg_wait *w = egress_conn_user(c);
  if (!w) return;
  if (gone) {
    w->conn = NULL;
    egress_conn_set_user(c, NULL);
  }
  wake(w);
}

static const egress_relay_hooks HOOKS = {NULL, relay_changed, accepted, conn_changed};

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
  loop_timer_stop(eg->lp, &eg->ready_timer);
  egress_relay *relay = eg->relay;
  eg->relay = NULL;
  egress_relay_free(relay); /* no hook runs: waiters find the handle closed */
  wait_slot_complete(&eg->ready_slot);
  if (eg->accept_waiter) wake(eg->accept_waiter);
  return 0;
}

static int egress_tostring(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  lua_pushfstring(L, "%s (%s)", EGRESS.what,
                  eg->handle.closed ? "closed" : egress_relay_ended(eg->relay, NULL) ? "ended" : "open");
  return 1;
}

static int lost(lua_State *L, egress *eg) {
  const char *why = NULL;
  egress_relay_ended(eg->relay, &why);
  return luagent_fail(L, "egress_lost", "the sandbox's egress relay is gone: %s", why);
}

static egress_conn *check_conn(lua_State *L, egress *eg, int idx) {
  egress_conn *c = egress_relay_find(eg->relay, luaL_checkinteger(L, idx));
  luaL_argcheck(L, c != NULL, idx, "no such connection");
  if (egress_conn_user(c)) luaL_error(L, "connection %d: another task is already waiting for it", (int)egress_conn_id(c));
  return c;
}

static void ready_timeout(loop_timer *t) {
  egress *eg = (egress *)((char *)t - offsetof(egress, ready_timer));
  if (!egress_relay_ready(eg->relay)) egress_relay_end(eg->relay, "it did not say it was listening in time");
}

static int open_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  egress *eg = (egress *)ctx;
  sched_check_cancelled(L, &eg->ready_slot);
  luagent_check_open(L, 2, &EGRESS);
  loop_timer_stop(eg->lp, &eg->ready_timer);
  if (!egress_relay_ready(eg->relay)) {
    const char *why = NULL, *kind = egress_relay_open_error(eg->relay);
    egress_relay_ended(eg->relay, &why);
    buf diag = BUF_INIT;
    egress_relay_diagnostics(eg->relay, &diag);
    luagent_fail(L, kind[0] ? kind : "egress_lost", "the sandbox's egress relay did not start: %s%s%.300s", why,
                 diag.len ? "; it said: " : "", diag.data ? diag.data : "");
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
  wait_slot_init(&eg->ready_slot, NULL);
  loop_timer_init(&eg->ready_timer, ready_timeout);
  char err[512];
  eg->relay = egress_relay_start(eg->lp, &target, body, want_ca, &HOOKS, eg, err, sizeof err);
  if (made_url) lua_remove(L, 2);
  if (!eg->relay) return luagent_fail(L, want_ca && strstr(err, "certificate") ? "tls" : "config", "%s", err);
  loop_timer_start(eg->lp, &eg->ready_timer, opt_number(L, 1, "timeout", 15));
  luagent_handle_open(eg);
  return sched_await(L, &eg->ready_slot, (lua_KContext)eg, open_k);
}

/* ---- accept ---- */

static int accept_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  check_cancelled(L, w);
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  if (eg->handle.closed) {
    wait_finish(w);
    return luagent_fail(L, "closed", "the sandbox's egress was closed");
  }
  egress_conn *c = egress_relay_accept(eg->relay);
  if (!c && !egress_relay_ended(eg->relay, NULL)) return wait_again(L, w, accept_k);
  wait_finish(w);
  if (!c) return lost(L, eg);
  lua_pushinteger(L, egress_conn_id(c));
  return 1;
}

static int l_accept(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  if (eg->accept_waiter) return luaL_error(L, "another task is already accepting connections");
  lua_settop(L, 1);
  eg_wait *w = new_wait(L, eg, NULL, -1);
  return accept_k(L, LUA_OK, (lua_KContext)w);
}

/* ---- waiting for what the client sends ---- */

static int wait_conn_k(lua_State *L, int status, lua_KContext ctx);

/* Waits until ready(egress, conn), the function on top of [egress, conn,
 * ready], answers (results pushed, > 0); "closed" once the client cannot
 * send more, "timeout" after seconds. */
static int wait_for(lua_State *L, egress *eg, egress_conn *c, double seconds) {
  eg_wait *w = new_wait(L, eg, c, seconds); /* 4 */
  return wait_conn_k(L, LUA_OK, (lua_KContext)w);
}

static int wait_conn_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  check_cancelled(L, w);
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  egress_conn *c = w->conn;
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
  const char *why = NULL;
  if (egress_conn_closed(c, &why)) {
    wait_finish(w);
    return luagent_fail(L, "closed", "%s", why[0] ? why : "the client closed the connection");
  }
  if (w->timed_out) {
    wait_finish(w);
    return luagent_fail(L, "timeout", "nothing whole came in time");
  }
  return wait_again(L, w, wait_conn_k);
}

static egress_conn *conn_arg(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  return egress_relay_find(eg->relay, luaL_checkinteger(L, 2));
}

/* The request head once its end is there, parsed (src/core/http_head.c);
 * its kind is the closure's upvalue. */
static int head_ready(lua_State *L) {
  egress_conn *c = conn_arg(L);
  http_message m;
  int status = 400;
  const char *why = NULL;
  int rc = egress_conn_head(c, (int)lua_tointeger(L, lua_upvalueindex(1)), &m, &status, &why);
  if (rc == 0) return 0;
  if (rc < 0) rc = lhttp_fail(L, status, why);
  else lhttp_push_request(L, &m), rc = 1;
  http_message_free(&m);
  return rc;
}

static int l_head(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  egress_conn *c = check_conn(L, eg, 2);
  static const char *const kinds[] = {"proxy", "origin", NULL};
  int kind = luaL_checkoption(L, 4, "proxy", kinds) == 0 ? HTTP_PROXY_REQUEST : HTTP_ORIGIN_REQUEST;
  double seconds = luaL_optnumber(L, 3, 30);
  lua_settop(L, 2);
  lua_pushinteger(L, kind);
  lua_pushcclosure(L, head_ready, 1); /* 3 */
  return wait_for(L, eg, c, seconds);
}

static int hello_ready(lua_State *L) {
  egress_conn *c = conn_arg(L);
  char name[256];
  const char *why = NULL;
  int rc = egress_conn_hello(c, name, sizeof name, &why);
  if (rc == 0) return 0;
  if (rc == 1) lua_pushstring(L, name);
  else if (rc == 2) lua_pushboolean(L, 0);
  if (rc > 0) return 1;
  return luagent_fail(L, "protocol", "not a TLS ClientHello: %s", why ? why : "?");
}

static int l_hello(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  egress_conn *c = check_conn(L, eg, 2);
  double seconds = luaL_optnumber(L, 3, 30);
  lua_settop(L, 2);
  lua_pushcfunction(L, hello_ready); /* 3 */
  return wait_for(L, eg, c, seconds);
}

/* ---- answering, connecting, splicing ---- */

static int l_reply(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  egress_conn *c = check_conn(L, eg, 2);
  size_t n;
  const char *data = luaL_checklstring(L, 3, &n);
  if (egress_conn_reply(c, data, n, lua_toboolean(L, 4)) < 0) return luagent_fail(L, "closed", "the connection is closed");
  lua_pushboolean(L, 1);
  return 1;
}

/* policy: {{cidr, allow, ports}} -> net_rule[] in a userdata on the stack (Lua checked the texts). */
static net_rule *read_policy(lua_State *L, int t, size_t *count) {
  lua_getfield(L, t, "policy");
  size_t n = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
  net_rule *rules = lua_newuserdatauv(L, (n ? n : 1) * sizeof *rules, 0);
  memset(rules, 0, (n ? n : 1) * sizeof *rules);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, -2, (lua_Integer)i + 1);
    net_rule *r = &rules[i];
    const char *why = NULL;
    const char *cidr = opt_string(L, -1, "cidr", "", NULL);
    if (net_cidr_parse(cidr, &r->cidr, &why) != 0) luaL_error(L, "policy[%d]: %s: %s", (int)i + 1, cidr, why);
    r->allow = opt_boolean(L, -1, "allow", 0);
    lua_getfield(L, -1, "ports");
    for (size_t p = 1; lua_istable(L, -1) && p <= lua_rawlen(L, -1) && r->nports < 16; p++) {
      lua_rawgeti(L, -1, (lua_Integer)p);
      r->ports[r->nports++] = (unsigned short)lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 2);
  }
  *count = n;
  return rules;
}

static int connect_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  egress_conn *c = w->conn;
  check_cancelled(L, w);
  if (!c) {
    wait_finish(w);
    return luagent_fail(L, "closed", "the connection was closed while connecting");
  }
  const char *address, *kind, *why;
  int rc = egress_conn_connected(c, &address, &kind, &why);
  if (rc == 0) return wait_again(L, w, connect_k);
  wait_finish(w);
  if (rc > 0) {
    lua_pushstring(L, address);
    return 1;
  }
  return luagent_fail(L, kind, "%s", why);
}

static int l_connect(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  egress_conn *c = check_conn(L, eg, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  egress_upstream u = {0};
  u.host = opt_string(L, 3, "host", NULL, NULL);
  u.port = (int)opt_integer(L, 3, "port", 0);
  u.tls = opt_boolean(L, 3, "tls", 0);
  u.pin = opt_string(L, 3, "pin", NULL, NULL);
  u.ca_file = opt_string(L, 3, "ca_file", NULL, NULL);
  u.timeout = opt_number(L, 3, "timeout", 10);
  u.label = opt_string(L, 3, "label", NULL, NULL);
  u.need_rule = opt_boolean(L, 3, "need_rule", 0);
  u.policy = read_policy(L, 3, &u.npolicy);
  char err[512];
  if (egress_conn_connect(c, &u, err, sizeof err) != 0) {
    if (strstr(err, "canonical") || strstr(err, "already")) return luaL_error(L, "egress:connect: %s", err);
    return luagent_fail(L, "connect", "%s", err);
  }
  lua_settop(L, 2);
  eg_wait *w = new_wait(L, eg, c, -1);
  return connect_k(L, LUA_OK, (lua_KContext)w);
}

static int l_terminate(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  egress_conn *c = check_conn(L, eg, 2);
  const char *host = luaL_checkstring(L, 3);
  char err[512];
  if (egress_conn_terminate(c, host, err, sizeof err) != 0)
    return luagent_fail(L, "tls", "cannot terminate TLS for %s: %s", host, err);
  lua_pushboolean(L, 1);
  return 1;
}

static void push_stats(lua_State *L, const egress_conn *c) {
  egress_conn_stats s;
  egress_conn_stats_get(c, &s);
  lua_createtable(L, 0, 8);
  set_integer(L, "up", s.up);
  set_integer(L, "down", s.down);
  set_integer(L, "ms", (lua_Integer)s.ms);
  if (s.address[0]) set_string(L, "address", s.address);
  if (s.error[0]) set_string(L, "error", s.error);
  if (s.kind[0]) set_string(L, "kind", s.kind);
  if (s.exchange) {
    set_integer(L, "dropped", (lua_Integer)s.dropped);
    set_integer(L, "replaced", (lua_Integer)s.replaced);
  }
}

static int splice_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  eg_wait *w = (eg_wait *)ctx;
  egress_conn *c = w->conn;
  check_cancelled(L, w);
  if (!c) {
    wait_finish(w);
    return luagent_fail(L, "closed", "the connection was closed while spliced");
  }
  if (!egress_conn_finished(c)) return wait_again(L, w, splice_k);
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
  egress_conn *c = check_conn(L, eg, 2);
  size_t n = 0;
  const char *first = luaL_optlstring(L, 3, "", &n);
  const char *address, *kind, *why;
  luaL_argcheck(L, egress_conn_connected(c, &address, &kind, &why) != 0, 2, "connect it first");
  int exchange = lua_istable(L, 4) && opt_boolean(L, 4, "exchange", 0);
  scrub *sc = exchange ? read_scrub(L, 4) : NULL;
  egress_conn_splice(c, first, n, exchange, sc);
  lua_settop(L, 2);
  eg_wait *w = new_wait(L, eg, c, -1);
  return splice_k(L, LUA_OK, (lua_KContext)w);
}

static int l_forget(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  egress_conn_forget(check_conn(L, eg, 2));
  return 0;
}

static int l_limit(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  luaL_checktype(L, 2, LUA_TTABLE);
  egress_relay_limit(eg->relay, opt_integer(L, 2, "max_bytes", 0));
  return 0;
}

static int l_counters(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  egress_counters n = {0};
  if (eg->relay) egress_relay_counters(eg->relay, &n);
  lua_createtable(L, 0, 4);
  set_integer(L, "connections", n.connections);
  set_integer(L, "open", n.open);
  set_integer(L, "bytes_up", n.bytes_up);
  set_integer(L, "bytes_down", n.bytes_down);
  return 1;
}

static int l_ca_pem(lua_State *L) {
  egress *eg = luagent_check_open(L, 1, &EGRESS);
  buf pem = BUF_INIT;
  if (egress_relay_ca_pem(eg->relay, &pem) < 0) return 0;
  lua_pushlstring(L, pem.data ? pem.data : "", pem.len);
  buf_free(&pem);
  return 1;
}

static int l_alive(lua_State *L) {
  egress *eg = luagent_check_handle(L, 1, &EGRESS);
  const char *why = "closed by the host";
  int ended = !eg->relay || egress_relay_ended(eg->relay, &why);
  lua_pushboolean(L, !ended);
  if (!ended) return 1;
  lua_pushstring(L, why);
  return 2;
}

void legress_register(lua_State *L) {
  static const luaL_Reg wait_methods[] = {{"__gc", wait_gc}, {NULL, NULL}};
  luagent_register_handle(L, &EGRESS);
  luagent_new_class(L, WAIT_CLASS, wait_methods);
}

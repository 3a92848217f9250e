/* lua_http: luagent.http.
 *
 *   http.request{method, url, headers = {name = value}, body, body_file,
 *                timeout, connect_timeout, idle_timeout, unix_socket,
 *                insecure, ca_file, cert_file, key_file (or ca_pem, cert_pem,
 *                key_pem: the PEM text itself), decompress,
 *                max_body, on_chunk = function(chunk) ... end}
 *     -> {status, headers = {lower-case name = value}, body, elapsed}
 *      | nil, err   err.kind: timeout | connect | tls | network | protocol |
 *                            aborted | too_large | io | bad_url | cancelled
 *     HTTP error statuses are responses, not errors: policy is the caller's.
 *     With on_chunk a successful (2xx) body is streamed (and not kept); an
 *     error body is kept in res.body, so the server's message is not lost.
 *     Returning false from on_chunk stops the transfer. Yields inside a task.
 *   http.sse(on_event) -> on_chunk   parses server-sent events;
 *     on_event{event, data, id, retry}; returning false stops the stream.
 *   http.sse_parser() -> parser      parser:feed(chunk) -> {events...},
 *                                    parser:pending() -> cut inside an event?
 *                                    parser:close(); after it every use raises
 *                                    "sse parser is closed" (the on_chunk of
 *                                    http.sse too)
 *
 * Handles (lua_util.h's discipline): the request handle that owns a transfer
 * (internal to one call: http.request's, or an lhttp_perform owner's) and
 * the SSE parser. Closing a request stops its transfer and wakes its waiter,
 * which raises "http request is closed" (or "<owner> is closed"). */
#include <errno.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "http.h"
#include "lua_http.h"
#include "lua_util.h"
#include "sse.h"

#define MAX_PENDING (1 << 20) /* streamed bytes buffered before pausing the transfer */

typedef struct lrequest {
  luagent_handle handle;
  http_xfer *x;
  wait_slot slot;
  int self;         /* stack index of this userdata in the waiting C frame */
  lhttp_owner *owner;     /* whose transfer this is (NULL: http.request's own) */
  lhttp_finish_fn finish; /* with an owner */
  buf pending;      /* streamed bytes not yet given to on_chunk */
  int streaming;
  int paused;
  int in_callback;  /* on_chunk is running (its result is on the stack) */
  int stopped;      /* on_chunk returned false */
  char *header_lines;
} lrequest;

/* uservalue slots */
enum { UV_BODY = 1, UV_ON_CHUNK = 2, UV_OWNER = 3 };

static int l_request_close(lua_State *L);
static const luaL_Reg REQUEST_METHODS[] = {{NULL, NULL}};
static const luagent_handle_class REQUEST = {"luagent.http.request", "http request", REQUEST_METHODS,
                                             l_request_close, NULL};

static void request_done(http_xfer *x, void *ctx) {
  (void)x;
  lrequest *r = ctx;
  wait_slot_complete(&r->slot);
}

static size_t request_sink(void *ctx, const char *data, size_t n) {
  lrequest *r = ctx;
  if (r->stopped) return 0;
  if (r->pending.len > 0 && r->pending.len + n > MAX_PENDING) {
    r->paused = 1;
    return HTTP_SINK_PAUSE; /* not consumed: curl hands these bytes again after resume */
  }
  buf_append(&r->pending, data, n);
  wait_slot_complete(&r->slot);
  return n;
}

static void request_cancel(wait_slot *slot) {
  lrequest *r = (lrequest *)((char *)slot - offsetof(lrequest, slot));
  http_abort(r->x);
}

/* Idempotent; frees the transfer and wakes a task waiting for it (which
 * then raises). Never waits: it is also the finalizer. */
static void release(lrequest *r) {
  if (!luagent_handle_release(r)) return;
  if (r->owner && r->owner->request == r) r->owner->request = NULL;
  http_free(r->x);
  r->x = NULL;
  buf_free(&r->pending);
  free(r->header_lines);
  r->header_lines = NULL;
  wait_slot_complete(&r->slot);
}

static int l_request_close(lua_State *L) {
  release(luagent_check_handle(L, 1, &REQUEST));
  return 0;
}

void lhttp_owner_close(lhttp_owner *owner) {
  if (owner->request) release(owner->request);
}

/* A waiter woken because its request (or the request's owner) was closed. */
static void check_still_open(lua_State *L, const lrequest *r) {
  if (r->owner && r->owner->handle.closed) luaL_error(L, "%s is closed", r->owner->what);
  if (r->handle.closed) luaL_error(L, "%s is closed", REQUEST.what);
}

/* Joins the headers table into "Name: value\0" lines with a NULL-terminated
 * pointer array after them, in one allocation owned by the request. */
static const char **collect_headers(lua_State *L, int opts, lrequest *r) {
  if (lua_getfield(L, opts, "headers") == LUA_TNIL) {
    lua_pop(L, 1);
    return NULL;
  }
  luaL_argcheck(L, lua_istable(L, -1), 1, "option 'headers' must be a table of name = value");
  buf text = BUF_INIT;
  size_t count = 0;
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    if (lua_type(L, -2) != LUA_TSTRING || !lua_isstring(L, -1)) {
      buf_free(&text);
      luaL_error(L, "option 'headers': every entry must be name = string value");
    }
    const char *name = lua_tostring(L, -2), *value = lua_tostring(L, -1);
    if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n")) {
      buf_free(&text);
      luaL_error(L, "option 'headers': header '%s' contains a line break or colon", name);
    }
    buf_printf(&text, "%s: %s", name, value);
    buf_append_char(&text, '\0');
    count++;
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  size_t table_size = (count + 1) * sizeof(char *);
  char *block = malloc(table_size + text.len + 1);
  if (!block) {
    buf_free(&text);
    luaL_error(L, "out of memory");
  }
  const char **lines = (const char **)block;
  char *p = block + table_size;
  if (text.len) memcpy(p, text.data, text.len);
  for (size_t i = 0; i < count; i++) {
    lines[i] = p;
    p += strlen(p) + 1;
  }
  lines[count] = NULL;
  buf_free(&text);
  r->header_lines = block;
  return lines;
}

static void push_headers(lua_State *L, const buf *h) {
  lua_newtable(L);
  const char *p = h->data, *end = p ? p + h->len : NULL;
  while (p && p < end) {
    const char *value = p + strlen(p) + 1;
    lua_getfield(L, -1, p);
    if (lua_isstring(L, -1)) {
      /* a repeated header: values joined as HTTP allows */
      lua_pushfstring(L, "%s, %s", lua_tostring(L, -1), value);
      lua_setfield(L, -3, p);
    } else {
      lua_pushstring(L, value);
      lua_setfield(L, -3, p);
    }
    lua_pop(L, 1);
    p = value + strlen(value) + 1;
  }
}

int lhttp_push_failure(lua_State *L, http_xfer *x) {
  luagent_fail(L, http_error_kind(x), "%s", http_error_message(x));
  if (http_status(x)) luagent_error_set_integer(L, "status", http_status(x));
  return 2;
}

static int push_response(lua_State *L, lrequest *r) {
  http_xfer *x = r->x;
  if (http_failed(x) && !r->stopped) return lhttp_push_failure(L, x);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, http_status(x));
  lua_setfield(L, -2, "status");
  push_headers(L, http_headers(x));
  lua_setfield(L, -2, "headers");
  const buf *body = http_body(x);
  lua_pushlstring(L, body->data ? body->data : "", body->len);
  lua_setfield(L, -2, "body");
  lua_pushnumber(L, http_elapsed(x));
  lua_setfield(L, -2, "elapsed");
  return 1;
}

static int request_k(lua_State *L, int status, lua_KContext ctx);

/* Hands buffered stream bytes to on_chunk, inside the task, so on_chunk may
 * itself wait. Returns 1 when a call was started (continues in request_k). */
static int deliver_chunk(lua_State *L, lrequest *r) {
  lua_getiuservalue(L, r->self, UV_ON_CHUNK);
  lua_pushlstring(L, r->pending.data, r->pending.len);
  buf_clear(&r->pending);
  if (r->paused) {
    r->paused = 0;
    http_resume(r->x);
  }
  r->in_callback = 1;
  lua_callk(L, 1, 1, (lua_KContext)r, request_k);
  return request_k(L, LUA_OK, (lua_KContext)r);
}

/* The transfer ended: the owner's finish, or http.request's response. */
static int finish_request(lua_State *L, lrequest *r) {
  if (!r->owner) return push_response(L, r);
  lhttp_owner *owner = r->owner;
  owner->request = NULL;
  return r->finish(L, r->x, owner);
}

static int request_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  lrequest *r = (lrequest *)ctx;
  if (r->in_callback) {
    r->in_callback = 0;
    int stop = lua_toboolean(L, -1) == 0 && !lua_isnil(L, -1);
    lua_pop(L, 1);
    check_still_open(L, r);
    if (stop) {
      r->stopped = 1;
      http_abort(r->x);
      return finish_request(L, r);
    }
  }
  sched_check_cancelled(L, &r->slot);
  check_still_open(L, r);
  if (r->streaming && r->pending.len > 0) return deliver_chunk(L, r);
  if (!http_finished(r->x) && !r->stopped) {
    wait_slot_init(&r->slot, request_cancel);
    return sched_await(L, &r->slot, ctx, request_k);
  }
  return finish_request(L, r);
}

void lhttp_read_tls(lua_State *L, int idx, http_tls *tls) {
  tls->insecure = opt_boolean(L, idx, "insecure", 0);
  tls->ca_file = opt_string(L, idx, "ca_file", NULL, NULL);
  tls->cert_file = opt_string(L, idx, "cert_file", NULL, NULL);
  tls->key_file = opt_string(L, idx, "key_file", NULL, NULL);
  tls->ca_pem = opt_string(L, idx, "ca_pem", NULL, NULL);
  tls->cert_pem = opt_string(L, idx, "cert_pem", NULL, NULL);
  tls->key_pem = opt_string(L, idx, "key_pem", NULL, NULL);
}

void lhttp_read_options(lua_State *L, int idx, http_request *req) {
  memset(req, 0, sizeof *req);
  req->url = opt_string(L, idx, "url", NULL, NULL);
  luaL_argcheck(L, req->url != NULL, 1, "option 'url' is required");
  req->method = opt_string(L, idx, "method", "GET", NULL);
  req->body = opt_string(L, idx, "body", NULL, &req->body_len);
  req->body_file = opt_string(L, idx, "body_file", NULL, NULL);
  req->unix_socket = opt_string(L, idx, "unix_socket", NULL, NULL);
  req->timeout = opt_number(L, idx, "timeout", 0);
  req->connect_timeout = opt_number(L, idx, "connect_timeout", 0);
  req->idle_timeout = opt_number(L, idx, "idle_timeout", 0);
  lhttp_read_tls(L, idx, &req->tls);
  req->decompress = opt_boolean(L, idx, "decompress", req->unix_socket == NULL);
  req->max_body = (size_t)opt_integer(L, idx, "max_body", 0);
}

/* Creates the request userdata, reads headers, starts the transfer. */
static lrequest *start_request(lua_State *L, int opts, http_request *req, const http_sink *sink, int streaming) {
  lrequest *r = luagent_new_handle(L, &REQUEST, sizeof *r, 3);
  r->self = lua_gettop(L);
  r->streaming = streaming;
  wait_slot_init(&r->slot, request_cancel);
  if (req->body) {
    lua_getfield(L, opts, "body");
    lua_setiuservalue(L, r->self, UV_BODY); /* keeps the bytes alive during the transfer */
  }
  req->headers = collect_headers(L, opts, r);
  http_sink own = {request_sink, r};
  if (streaming) sink = &own;
  char err[256];
  r->x = http_start(host_of(L)->loop, req, sink, request_done, r, err, sizeof err);
  if (!r->x) luaL_error(L, "%s", err);
  luagent_handle_open(r);
  return r;
}

int lhttp_perform(lua_State *L, int opts_idx, http_request *req, const http_sink *sink,
                  lhttp_finish_fn finish, int owner_idx) {
  opts_idx = lua_absindex(L, opts_idx);
  owner_idx = lua_absindex(L, owner_idx);
  lhttp_owner *owner = lua_touserdata(L, owner_idx);
  luaL_argcheck(L, owner && !owner->handle.closed && !owner->request, owner_idx, "an open transfer owner");
  lrequest *r = start_request(L, opts_idx, req, sink, 0);
  lua_pushvalue(L, owner_idx);
  lua_setiuservalue(L, r->self, UV_OWNER); /* the owner lives as long as its transfer */
  r->owner = owner;
  r->finish = finish;
  owner->request = r;
  return sched_await(L, &r->slot, (lua_KContext)r, request_k);
}

/* http.request(opts) -> response | nil, err */
static int l_request(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  http_request req;
  lhttp_read_options(L, 1, &req);
  int streaming = opt_function(L, 1, "on_chunk");
  if (streaming) lua_pop(L, 1);
  req.sink_success_only = streaming;
  lrequest *r;
  if (req.body_file && access(req.body_file, R_OK) != 0)
    return luagent_fail(L, "io", "cannot read request body %s: %s", req.body_file, strerror(errno));
  r = start_request(L, 1, &req, NULL, streaming);
  if (streaming) {
    opt_function(L, 1, "on_chunk");
    lua_setiuservalue(L, r->self, UV_ON_CHUNK);
  }
  return sched_await(L, &r->slot, (lua_KContext)r, request_k);
}

/* ---- server-sent events ---- */

typedef struct lparser {
  luagent_handle handle;
  sse_parser p;
} lparser;

static int l_parser_feed(lua_State *L);
static int l_parser_pending(lua_State *L);
static int l_parser_close(lua_State *L);
static const luaL_Reg PARSER_METHODS[] = {{"feed", l_parser_feed}, {"pending", l_parser_pending}, {NULL, NULL}};
static const luagent_handle_class PARSER = {"luagent.http.sse_parser", "sse parser", PARSER_METHODS,
                                            l_parser_close, NULL};

static int collect_event(void *ctx, const sse_event *ev) {
  lua_State *L = ctx;
  lua_createtable(L, 0, 4);
  lua_pushlstring(L, ev->event, ev->event_len);
  lua_setfield(L, -2, "event");
  lua_pushlstring(L, ev->data, ev->data_len);
  lua_setfield(L, -2, "data");
  if (ev->id_len) {
    lua_pushlstring(L, ev->id, ev->id_len);
    lua_setfield(L, -2, "id");
  }
  if (ev->retry >= 0) {
    lua_pushinteger(L, ev->retry);
    lua_setfield(L, -2, "retry");
  }
  lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
  return 0;
}

/* parser:feed(chunk) -> {events...} */
static int l_parser_feed(lua_State *L) {
  lparser *lp = luagent_check_open(L, 1, &PARSER);
  size_t n;
  const char *chunk = luaL_checklstring(L, 2, &n);
  lua_newtable(L);
  sse_feed(&lp->p, chunk, n, collect_event, L);
  return 1;
}

/* parser:pending() -> did the stream stop inside an event? */
static int l_parser_pending(lua_State *L) {
  lparser *lp = luagent_check_open(L, 1, &PARSER);
  lua_pushboolean(L, sse_pending(&lp->p));
  return 1;
}

/* parser:close() (also <close> and __gc): frees its buffers; idempotent. */
static int l_parser_close(lua_State *L) {
  lparser *lp = luagent_check_handle(L, 1, &PARSER);
  if (luagent_handle_release(lp)) sse_free(&lp->p);
  return 0;
}

/* http.sse_parser() -> parser */
static int l_sse_parser(lua_State *L) {
  lparser *lp = luagent_new_handle(L, &PARSER, sizeof *lp, 0);
  sse_init(&lp->p);
  luagent_handle_open(lp);
  return 1;
}

/* The on_chunk closure made by http.sse: upvalues parser, on_event. Events
 * are collected first, then given to on_event one by one with lua_callk, so
 * on_event may wait. Stack: chunk, events, index. */
static int sse_chunk_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  if (ctx) { /* returning from on_event */
    int keep_going = lua_toboolean(L, -1) || lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!keep_going) {
      lua_pushboolean(L, 0);
      return 1;
    }
  }
  lua_Integer i = lua_tointeger(L, 3) + 1;
  if (i > (lua_Integer)lua_rawlen(L, 2)) return 0;
  lua_pushinteger(L, i);
  lua_replace(L, 3);
  lua_pushvalue(L, lua_upvalueindex(2));
  lua_rawgeti(L, 2, i);
  lua_callk(L, 1, 1, 1, sse_chunk_k);
  return sse_chunk_k(L, LUA_OK, 1);
}

static int sse_on_chunk(lua_State *L) {
  lparser *lp = lua_touserdata(L, lua_upvalueindex(1));
  if (lp->handle.closed) return luaL_error(L, "%s is closed", PARSER.what);
  size_t n;
  const char *chunk = luaL_checklstring(L, 1, &n);
  lua_settop(L, 1);
  lua_newtable(L);
  sse_feed(&lp->p, chunk, n, collect_event, L);
  lua_pushinteger(L, 0);
  return sse_chunk_k(L, LUA_OK, 0);
}

/* http.sse(on_event) -> on_chunk, parser */
static int l_sse(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  l_sse_parser(L);
  lua_pushvalue(L, -1);
  lua_pushvalue(L, 1);
  lua_pushcclosure(L, sse_on_chunk, 2);
  lua_insert(L, -2);
  return 2;
}

int luaopen_luagent_http(lua_State *L) {
  static const luaL_Reg funcs[] = {
      {"request", l_request}, {"sse", l_sse}, {"sse_parser", l_sse_parser}, {NULL, NULL}};
  luagent_register_handle(L, &REQUEST);
  luagent_register_handle(L, &PARSER);
  luaL_newlib(L, funcs);
  return 1;
}

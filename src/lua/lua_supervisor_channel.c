/* lua_supervisor_channel: the supervisor channel of luagent.engine_stream — a
 * hijacked Docker attach, or a Kubernetes exec, to `luagent-supervisor serve`
 * running in a session (sandbox/supervisor/DESIGN.md), which runs many
 * commands over one connection. Requests are encoded by lua_supervisor_send.c (with
 * src/core/supervisor_proto.h), frames parsed by src/core/supervisor_frames.h,
 * a pack's stream goes into a sink (lua_pack_sink.h).
 *
 *   engine_stream.supervisor(client:options("/exec/ID/start", {body, timeout}))
 *       -> channel | nil, err     returns once the supervisor said "R 2"
 *     the options of a streaming call: url, unix_socket, TLS (ca_file,
 *     cert_file, key_file or ca_pem, cert_pem, key_pem: PEM text; insecure),
 *     connect_timeout; timeout: seconds for the supervisor to say it is ready
 *     (15). {unix_socket, path = "/vX/..."} is the same as url =
 *     "http://localhost/vX/...". The connection is made on the event loop,
 *     over a unix socket, TCP or TLS alike (src/core/attach.h).
 *   engine_stream.supervisor{websocket = true, url = "https://API:6443/api/v1/
 *       namespaces/NS/pods/POD/exec?container=C&command=...&stdin=true&stdout=true
 *       &stderr=true", headers = {Authorization = "Bearer ..."}, TLS, timeout}
 *     the same channel over a Kubernetes exec: a WebSocket speaking
 *     v5.channel.k8s.io or v4.channel.k8s.io (src/core/kube_exec.h);
 *     headers (a map, as luagent.http's) go with the upgrade request; body
 *     is not sent. Closing the channel closes the exec's stdin, as on Docker.
 *     Failing before the engine let the attach through, err's kind is the
 *     attach's (docker_unreachable or cluster_unreachable, tls, docker or
 *     kubernetes — err.status is then the HTTP status and the message the
 *     API server's own, e.g. pods "x" not found —, network, protocol) and its
 *     message names the engine; afterwards it is supervisor_lost, its reason
 *     saying how the exec ended (the Status of a Kubernetes exec).
 *     channel:send(op, id, fields [, opts]) -> true | nil, err   (lua_supervisor_send.c)
 *     channel:wait(id [, seconds [, on_output]]) -> true (ended) | false (time
 *         passed, or output came when on_output) | nil, err (kind supervisor_lost: the
 *         supervisor is gone; kind closed: the channel was closed while this
 *         task waited)
 *     channel:fresh(id) -> stdout, stderr   what command id printed since the last
 *         fresh() (the first call starts it: "", ""), without taking it from its
 *         result; a wait(id, s, true) then wakes on fresh output. A reader that falls
 *         behind by more than LIVE_MAX bytes loses the excess, said in the text
 *     channel:take(id) -> stdout, stderr   what command id printed since the last take
 *         (a command sent with opts.window: the channel stops reading while that
 *         much of its stdout waits here untaken, so the taker paces the supervisor)
 *     channel:result(id) -> {stdout, stderr, exit_code, flags, killed, timed_out,
 *         oom_killed, failure, done, truncated, stdout_bytes, stderr_bytes,
 *         report | saved | sink_error (a pack's)}   and forgets the id
 *     channel:alive() -> true | false, reason
 *     channel:mark() -> integer | nil   the mark of the last X frame that came (any
 *         command's): the change generation of the folder serve watches (a
 *         `watch` request); nil when that X had none (not watched, or unknown)
 *     channel:close()   ends the connection (also <close> and __gc); idempotent
 *     tostring(channel) -> "supervisor channel (open|ended|closed)"
 *
 * Two ways a channel stops. The supervisor may go away by itself (its
 * process died, the container stopped): the channel is *ended*, still open;
 * send and wait return nil, err of kind supervisor_lost, and every result stays
 * readable. close() *closes* the handle: the connection ends (the supervisor
 * kills everything it started), tasks waiting in wait() wake with nil, err
 * of kind closed, and then send, wait and take raise "supervisor channel is
 * closed". Two methods still answer after close, because a task may be
 * returning from wait() when another closes the channel: alive() (false,
 * "closed by the host") and result(id), which gives what command id had
 * printed until then (its C buffers become a Lua table at close). */
#include "lua_supervisor_channel.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "lua_docker_wire.h"
#include "lua_engine_stream.h"
#include "supervisor_proto.h"

/* A task waiting in channel:wait(id): a userdata on that task's stack, so
 * it outlives the result it waits for when close() frees that. */
struct result_wait {
  wait_slot slot;
  loop_timer timer;
  loop *lp;
  long long id;
  int on_output;         /* output wakes it too */
  sv_result *result; /* NULL once the result let go of it */
};

#define LIVE_MAX (1024 * 1024) /* bytes kept per stream for fresh() */

static const char WAIT_CLASS[] = "luagent.engine_stream.supervisor_wait";

static int channel_close(lua_State *L);
static int channel_tostring(lua_State *L);
static int l_channel_wait(lua_State *L);
static int l_channel_take(lua_State *L);
static int l_channel_fresh(lua_State *L);
static int l_channel_result(lua_State *L);
static int l_channel_alive(lua_State *L);
static int l_channel_mark(lua_State *L);
/* and send, added by lua_supervisor_send.c */
static const luaL_Reg CHANNEL_METHODS[] = {{"wait", l_channel_wait},     {"take", l_channel_take}, {"fresh", l_channel_fresh},
                                           {"result", l_channel_result}, {"alive", l_channel_alive},
                                           {"mark", l_channel_mark},     {NULL, NULL}};
const luagent_handle_class SUPERVISOR_CHANNEL = {"luagent.engine_stream.supervisor", "supervisor channel", CHANNEL_METHODS,
                                             channel_close, channel_tostring};

/* ---- results and their waiters ---- */

sv_result *lchannel_find(sv_channel *ch, long long id) {
  for (sv_result *r = ch->results; r; r = r->next)
    if (r->id == id) return r;
  return NULL;
}

sv_result *lchannel_add(sv_channel *ch, long long id, size_t cap, size_t err_cap) {
  sv_result *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->id = id;
  r->caps[DOCKER_STDOUT] = cap;
  r->caps[DOCKER_STDERR] = err_cap;
  capped_init(&r->out[DOCKER_STDOUT], cap);
  capped_init(&r->out[DOCKER_STDERR], err_cap);
  r->next = ch->results;
  ch->results = r;
  return r;
}

/* Wakes the task waiting for r, if any (it finds out why itself). */
static void wake_waiter(sv_result *r) {
  result_wait *w = r->waiter;
  if (!w) return;
  loop_timer_stop(w->lp, &w->timer);
  wait_slot_complete(&w->slot);
}

/* Lets go of r's sink, and of its extractor's anchor (the channel at index 1). */
static void free_sink(lua_State *L, sv_result *r) {
  if (!r->sink) return;
  if (r->sink->extract) {
    lua_getiuservalue(L, 1, CHANNEL_UV_SINKS);
    lua_pushnil(L);
    lua_rawseti(L, -2, (lua_Integer)r->id);
    lua_pop(L, 1);
  }
  lsink_free(r->sink);
  r->sink = NULL;
}

static void free_result(lua_State *L, sv_result *r) {
  wake_waiter(r);
  if (r->waiter) r->waiter->result = NULL;
  r->waiter = NULL;
  free_sink(L, r);
  capped_free(&r->out[DOCKER_STDOUT]);
  capped_free(&r->out[DOCKER_STDERR]);
  buf_free(&r->fresh[DOCKER_STDOUT]);
  buf_free(&r->fresh[DOCKER_STDERR]);
  buf_free(&r->failure);
  free(r);
}

/* Removes command id from the channel's list; NULL if it has none. */
static sv_result *take_result(sv_channel *ch, long long id) {
  sv_result **link = &ch->results;
  while (*link && (*link)->id != id) link = &(*link)->next;
  sv_result *r = *link;
  if (r) *link = r->next;
  return r;
}

void lchannel_forget(lua_State *L, sv_channel *ch, long long id) {
  sv_result *r = take_result(ch, id);
  if (r) free_result(L, r);
  lchannel_pace(ch);
}

void lchannel_pace(sv_channel *ch) {
  int full = 0;
  for (sv_result *r = ch->results; r && !full; r = r->next)
    full = r->window && r->out[DOCKER_STDOUT].total >= r->window;
  if (full == ch->paused || !ch->attach) return;
  ch->paused = full;
  docker_attach_pause(ch->attach, full);
}

/* Pushes the result table of r (and a pack's report, see lsink_finish). */
static void push_result(lua_State *L, sv_result *r) {
  int truncated = 0;
  lua_createtable(L, 0, 14);
  lwire_set_output(L, &r->out[DOCKER_STDOUT], "stdout", "stdout_bytes", &truncated);
  lwire_set_output(L, &r->out[DOCKER_STDERR], "stderr", "stderr_bytes", &truncated);
  set_integer(L, "stdout_bytes", (lua_Integer)(r->taken[DOCKER_STDOUT] + r->out[DOCKER_STDOUT].total));
  set_integer(L, "stderr_bytes", (lua_Integer)(r->taken[DOCKER_STDERR] + r->out[DOCKER_STDERR].total));
  set_boolean(L, "truncated", truncated || r->was_truncated);
  set_boolean(L, "done", r->done);
  if (r->done) {
    set_integer(L, "exit_code", r->exit.code);
    lua_pushstring(L, r->exit.flags);
    lua_setfield(L, -2, "flags");
    set_integer(L, "killed", r->exit.killed);
    set_boolean(L, "timed_out", r->exit.timed_out);
    set_boolean(L, "oom_killed", r->exit.oom);
    if (r->exit.mark >= 0) set_integer(L, "mark", (lua_Integer)r->exit.mark);
  }
  if (r->failure.len) {
    lua_pushlstring(L, r->failure.data, r->failure.len);
    lua_setfield(L, -2, "failure");
  }
  if (r->sink) lsink_finish(L, r->sink, r->done, r->exit.code, r->out[DOCKER_STDERR].total > 0);
}

static void wait_timer(loop_timer *t) {
  result_wait *w = (result_wait *)((char *)t - offsetof(result_wait, timer));
  wait_slot_complete(&w->slot);
}

static void wait_cancel(wait_slot *slot) {
  result_wait *w = (result_wait *)((char *)slot - offsetof(result_wait, slot));
  loop_timer_stop(w->lp, &w->timer);
}

/* The wait ended (or its frame was unwound): no timer, no link to the result. */
static void wait_finish(result_wait *w) {
  loop_timer_stop(w->lp, &w->timer);
  if (w->result) w->result->waiter = NULL;
  w->result = NULL;
}

static int wait_gc(lua_State *L) {
  wait_finish(luaL_checkudata(L, 1, WAIT_CLASS));
  return 0;
}

/* ---- what the supervisor says ---- */

static void on_frame_ready(void *ctx, const char *version) {
  sv_channel *ch = ctx;
  snprintf(ch->version, sizeof ch->version, "%s", version);
  ch->ready = 1;
  wait_slot_complete(&ch->ready_slot);
}

static void kill_pack(sv_channel *ch, long long id) {
  buf kill = BUF_INIT;
  if (sv_encode_op(&kill, sv_op_find("kill"), id, NULL, NULL) == 0) lchannel_write(ch, &kill);
  buf_free(&kill);
}

static void on_frame_output(void *ctx, long long id, int stream, const char *data, size_t n) {
  sv_channel *ch = ctx;
  sv_result *r = lchannel_find(ch, id);
  if (!r) return;
  if (stream == DOCKER_STDOUT && r->sink) {
    if (lsink_feed(r->sink, data, n)) kill_pack(ch, r->id); /* refused: stop the stream at once */
    return;
  }
  capped_write(&r->out[stream], data, n);
  if (r->live && r->fresh[stream].len + n <= LIVE_MAX) buf_append(&r->fresh[stream], data, n);
  else if (r->live) r->fresh_dropped[stream] += n;
  if (r->window) lchannel_pace(ch);
  if (r->waiter && r->waiter->on_output) wake_waiter(r);
}

static void on_frame_failed(void *ctx, long long id, const char *data, size_t n) {
  sv_result *r = lchannel_find(ctx, id);
  if (r) buf_append(&r->failure, data, n);
}

static void on_sv_exited(void *ctx, long long id, const sv_exit *x) {
  ((sv_channel *)ctx)->mark = x->mark; /* every X, a forgotten command's too */
  sv_result *r = lchannel_find(ctx, id);
  if (!r) return;
  r->done = 1;
  r->exit = *x;
  wake_waiter(r);
}

static const sv_frame_events FRAME_EVENTS = {on_frame_ready, on_frame_output, on_frame_failed,
                                            on_sv_exited};

/* The connection is over: every waiter wakes and finds out why. */
static void channel_ended(sv_channel *ch, const char *why) {
  if (ch->ended) return;
  ch->ended = 1;
  snprintf(ch->reason, sizeof ch->reason, "%s", why ? why : "its stream ended");
  loop_timer_stop(ch->lp, &ch->ready_timer);
  wait_slot_complete(&ch->ready_slot);
  for (sv_result *r = ch->results; r; r = r->next) wake_waiter(r);
}

static void attach_open(void *ctx) {
  sv_channel *ch = ctx;
  ch->attached = 1;
}

static int attach_data(void *ctx, int stream, const char *data, size_t n) {
  sv_channel *ch = ctx;
  if (stream == DOCKER_STDERR) return capped_write(&ch->diagnostics, data, n);
  if (sv_frames_feed(&ch->parser, data, n, &FRAME_EVENTS, ch) != 0) {
    char why[300];
    snprintf(why, sizeof why, "it said something outside its protocol: %.200s",
             ch->parser.line.data ? ch->parser.line.data : "");
    channel_ended(ch, why);
    return -1;
  }
  return 0;
}

static void attach_close(void *ctx, const char *kind, const char *why) {
  sv_channel *ch = ctx;
  if (kind && !ch->attached) {
    snprintf(ch->open_error, sizeof ch->open_error, "%s", kind);
    ch->open_status = ch->attach ? docker_attach_status(ch->attach) : 0;
  }
  channel_ended(ch, why);
}

static const attach_callbacks ATTACH_CALLBACKS = {attach_open, attach_data, attach_close};

int lchannel_failure(lua_State *L, sv_channel *ch) {
  buf diag = BUF_INIT;
  capped_result(&ch->diagnostics, &diag);
  const char *tail = diag.len > 400 ? diag.data + diag.len - 400 : diag.data;
  lua_pushlstring(L, tail ? tail : "", diag.len > 400 ? 400 : diag.len);
  buf_free(&diag);
  luagent_fail(L, "supervisor_lost", "the sandbox supervisor is gone: %s%s%s", ch->reason,
               lua_rawlen(L, -1) ? "; it said: " : "", lua_tostring(L, -1));
  lua_remove(L, -3);
  return 2;
}

int lchannel_write(sv_channel *ch, const buf *request) {
  return docker_attach_write(ch->attach, request->data, request->len);
}

/* ---- the handle ---- */

/* Idempotent; never waits. Ends the connection, wakes every waiter, and
 * keeps what the commands printed as Lua tables for result(id). Also a
 * channel's that never opened (its __gc). */
static int channel_close(lua_State *L) {
  sv_channel *ch = luagent_check_handle(L, 1, &SUPERVISOR_CHANNEL);
  if (!luagent_handle_release(ch)) return 0;
  docker_attach_free(ch->attach);
  ch->attach = NULL;
  channel_ended(ch, "closed by the host");
  lua_newtable(L);
  while (ch->results) {
    sv_result *r = ch->results;
    ch->results = r->next;
    push_result(L, r);
    lua_rawseti(L, -2, (lua_Integer)r->id);
    free_result(L, r);
  }
  lua_setiuservalue(L, 1, CHANNEL_UV_CLOSED);
  sv_frames_free(&ch->parser);
  capped_free(&ch->diagnostics);
  return 0;
}

static int channel_tostring(lua_State *L) {
  sv_channel *ch = luagent_check_handle(L, 1, &SUPERVISOR_CHANNEL);
  lua_pushfstring(L, "%s (%s)", SUPERVISOR_CHANNEL.what, ch->handle.closed ? "closed" : ch->ended ? "ended" : "open");
  return 1;
}

static void ready_timeout(loop_timer *t) {
  sv_channel *ch = (sv_channel *)((char *)t - offsetof(sv_channel, ready_timer));
  if (!ch->ready) channel_ended(ch, "it did not say it was ready in time");
}

static int channel_ready_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  sv_channel *ch = (sv_channel *)ctx;
  sched_check_cancelled(L, &ch->ready_slot);
  luagent_check_open(L, 2, &SUPERVISOR_CHANNEL);
  loop_timer_stop(ch->lp, &ch->ready_timer);
  if (!ch->ready && ch->open_error[0]) {
    luagent_fail(L, ch->open_error, "cannot open the channel to the sandbox supervisor: %s", ch->reason);
    if (ch->open_status) luagent_error_set_integer(L, "status", ch->open_status);
    return 2;
  }
  if (!ch->ready) return lchannel_failure(L, ch);
  if (strcmp(ch->version, SV_PROTOCOL_VERSION) != 0)
    return luagent_fail(L, "protocol", "the sandbox supervisor speaks protocol %s, this luagent speaks %s",
                        ch->version, SV_PROTOCOL_VERSION);
  lua_settop(L, 2);
  return 1;
}

/* engine_stream.supervisor(opts) -> channel | nil, err */
int lchannel_open(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *body = opt_string(L, 1, "body", "{\"Detach\":false,\"Tty\":false}", NULL);
  attach_target target = lwire_attach_target(L);
  int made_url = lua_gettop(L) > 1;
  sv_channel *ch = luagent_new_handle(L, &SUPERVISOR_CHANNEL, sizeof *ch, CHANNEL_UV_COUNT);
  ch->lp = host_of(L)->loop;
  ch->mark = -1;
  sv_frames_init(&ch->parser);
  capped_init(&ch->diagnostics, 65536);
  wait_slot_init(&ch->ready_slot, NULL);
  loop_timer_init(&ch->ready_timer, ready_timeout);
  lua_newtable(L); /* the pack sinks' handles, by id */
  lua_setiuservalue(L, -2, CHANNEL_UV_SINKS);
  char err[512];
  ch->attach = docker_attach_start(ch->lp, &target, body, &ATTACH_CALLBACKS, ch, err, sizeof err);
  if (made_url) lua_remove(L, 2); /* the channel is at 2 */
  if (!ch->attach) return luagent_fail(L, "config", "%s", err); /* never opened: __gc frees it */
  loop_timer_start(ch->lp, &ch->ready_timer, opt_number(L, 1, "timeout", 15));
  luagent_handle_open(ch); /* built: what remains is waiting for "R 2" */
  return sched_await(L, &ch->ready_slot, (lua_KContext)ch, channel_ready_k);
}

static int channel_wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  result_wait *w = (result_wait *)ctx;
  sv_result *r = w->result;
  wait_finish(w);
  sched_check_cancelled(L, &w->slot);
  sv_channel *ch = luagent_check_handle(L, 1, &SUPERVISOR_CHANNEL);
  if (ch->handle.closed)
    return luagent_fail(L, "closed", "the supervisor channel was closed while waiting for command %lld", w->id);
  if (r && r->done) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (ch->ended) return lchannel_failure(L, ch);
  lua_pushboolean(L, 0);
  return 1;
}

static int has_output(const sv_result *r) {
  if (r->live) return r->fresh[DOCKER_STDOUT].len > 0 || r->fresh[DOCKER_STDERR].len > 0;
  return r->out[DOCKER_STDOUT].total > 0 || r->out[DOCKER_STDERR].total > 0;
}

/* channel:wait(id [, seconds [, on_output]]) -> true | false | nil, err */
static int l_channel_wait(lua_State *L) {
  sv_channel *ch = luagent_check_open(L, 1, &SUPERVISOR_CHANNEL);
  long long id = luaL_checkinteger(L, 2);
  sv_result *r = lchannel_find(ch, id);
  lua_Number seconds = luaL_optnumber(L, 3, -1);
  int on_output = lua_toboolean(L, 4);
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  if (r->waiter) return luaL_error(L, "command %d: another task is already waiting for it", (int)id);
  lua_settop(L, 1);
  result_wait *w = lua_newuserdatauv(L, sizeof *w, 0);
  memset(w, 0, sizeof *w);
  luaL_setmetatable(L, WAIT_CLASS);
  w->lp = ch->lp;
  w->id = id;
  w->on_output = on_output;
  loop_timer_init(&w->timer, wait_timer);
  wait_slot_init(&w->slot, wait_cancel);
  w->result = r;
  r->waiter = w;
  if (r->done || ch->ended || (on_output && has_output(r))) return channel_wait_k(L, LUA_OK, (lua_KContext)w);
  if (seconds >= 0) loop_timer_start(ch->lp, &w->timer, seconds);
  return sched_await(L, &w->slot, (lua_KContext)w, channel_wait_k);
}

/* channel:fresh(id) -> stdout, stderr: the output since the last fresh. */
static int l_channel_fresh(lua_State *L) {
  sv_channel *ch = luagent_check_open(L, 1, &SUPERVISOR_CHANNEL);
  sv_result *r = lchannel_find(ch, luaL_checkinteger(L, 2));
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  r->live = 1;
  for (int s = DOCKER_STDOUT; s <= DOCKER_STDERR; s++) {
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, r->fresh[s].data ? r->fresh[s].data : "", r->fresh[s].len);
    if (r->fresh_dropped[s]) {
      lua_pushfstring(L, "\n[... %I bytes came faster than they were read, not shown ...]\n",
                      (lua_Integer)r->fresh_dropped[s]);
      luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    buf_clear(&r->fresh[s]);
    r->fresh_dropped[s] = 0;
  }
  return 2;
}

/* channel:take(id) -> stdout, stderr: the output since the last take. */
static int l_channel_take(lua_State *L) {
  sv_channel *ch = luagent_check_open(L, 1, &SUPERVISOR_CHANNEL);
  sv_result *r = lchannel_find(ch, luaL_checkinteger(L, 2));
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  for (int s = DOCKER_STDOUT; s <= DOCKER_STDERR; s++) {
    buf out = BUF_INIT;
    r->was_truncated |= capped_result(&r->out[s], &out);
    lua_pushlstring(L, out.data ? out.data : "", out.len);
    buf_free(&out);
    r->taken[s] += r->out[s].total;
    capped_free(&r->out[s]);
    capped_init(&r->out[s], r->caps[s]);
  }
  if (r->window) lchannel_pace(ch);
  return 2;
}

/* channel:result(id) -> {...}; forgets the id. Also after close. */
static int l_channel_result(lua_State *L) {
  sv_channel *ch = luagent_check_handle(L, 1, &SUPERVISOR_CHANNEL);
  long long id = luaL_checkinteger(L, 2);
  if (ch->handle.closed) {
    lua_getiuservalue(L, 1, CHANNEL_UV_CLOSED);
    luaL_argcheck(L, lua_rawgeti(L, -1, (lua_Integer)id) != LUA_TNIL, 2, "no command with this id was sent");
    lua_pushnil(L);
    lua_rawseti(L, -3, (lua_Integer)id);
    return 1;
  }
  sv_result *r = lchannel_find(ch, id);
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  push_result(L, r);
  free_result(L, take_result(ch, id));
  lchannel_pace(ch);
  return 1;
}

/* channel:alive() -> true | false, reason. Also after close. */
static int l_channel_alive(lua_State *L) {
  sv_channel *ch = luagent_check_handle(L, 1, &SUPERVISOR_CHANNEL);
  lua_pushboolean(L, !ch->ended);
  if (!ch->ended) return 1;
  lua_pushstring(L, ch->reason);
  return 2;
}

/* channel:mark() -> integer | nil. Also after close. */
static int l_channel_mark(lua_State *L) {
  sv_channel *ch = luagent_check_handle(L, 1, &SUPERVISOR_CHANNEL);
  if (ch->mark < 0) return 0;
  lua_pushinteger(L, (lua_Integer)ch->mark);
  return 1;
}

void lchannel_register(lua_State *L) {
  static const luaL_Reg wait_methods[] = {{"__gc", wait_gc}, {NULL, NULL}};
  luagent_register_handle(L, &SUPERVISOR_CHANNEL);
  luagent_new_class(L, WAIT_CLASS, wait_methods);
}

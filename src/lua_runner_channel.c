/* lua_runner_channel: the runner channel of luagent.engine_io — a hijacked
 * attach to an exec of sandbox/runner.py, which runs many commands over one
 * connection (protocol: runner.h).
 *
 *   engine_io.runner{unix_socket, path = "/vX/exec/ID/start", body, timeout}
 *       -> channel | nil, err     returns once the runner said it is ready
 *     channel:send(id, message [, max_output]) -> true | nil, err
 *         registers command id (> 0) and queues the bytes for the runner
 *     channel:wait(id [, seconds]) -> true (ended) | false (time passed)
 *         | nil, err (kind runner: the runner is gone; kind closed: the
 *           channel was closed while this task waited)
 *     channel:result(id) -> {stdout, stderr, exit_code, flags, failure, done,
 *         truncated, stdout_bytes, stderr_bytes}   and forgets the id
 *     channel:alive() -> true | false, reason
 *     channel:close()   ends the connection (also <close> and __gc); idempotent
 *     tostring(channel) -> "runner channel (open|ended|closed)"
 *
 * Two ways a channel stops. The runner may go away by itself (its process
 * died, the container restarted): the channel is *ended*, still open; send
 * and wait return nil, err of kind runner, and every result stays readable.
 * close() *closes* the handle: the connection ends, tasks waiting in wait()
 * wake with nil, err of kind closed, and then send and wait raise "runner
 * channel is closed". Two methods still answer after close, because a task
 * may be returning from wait() when another closes the channel: alive()
 * (false, "closed by the host") and result(id), which gives what command id
 * had printed until then (its C buffers become a Lua table at close). */
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "host.h"
#include "lua_engine_io.h"
#include "lua_util.h"
#include "runner.h"

typedef struct result_wait result_wait;

/* One command's output, collected as the runner reports it. */
typedef struct runner_result {
  long long id;
  capped_output out[3];
  buf failure;
  int done;
  int code;
  char flags[16];
  result_wait *waiter; /* the task waiting for it, if any */
  struct runner_result *next;
} runner_result;

/* A task waiting in channel:wait(id): a userdata on that task's stack, so
 * it outlives the result it waits for when close() frees that. */
struct result_wait {
  wait_slot slot;
  loop_timer timer;
  loop *lp;
  long long id;
  runner_result *result; /* NULL once the result let go of it */
};

typedef struct runner_channel {
  luagent_handle handle; /* closed: close() was called */
  docker_attach *attach;
  runner_parser parser;
  int ready;
  int ended;             /* the connection is over (runner gone, or closed) */
  char reason[512];
  capped_output diagnostics; /* the runner's own stderr */
  wait_slot ready_slot;
  loop_timer ready_timer;
  runner_result *results;
  loop *lp;
} runner_channel;

static const char WAIT_CLASS[] = "luagent.engine_io.runner_wait";
enum { UV_CLOSED_RESULTS = 1 }; /* id -> result table, made at close */

static int channel_close(lua_State *L);
static int channel_tostring(lua_State *L);
static int l_channel_send(lua_State *L);
static int l_channel_wait(lua_State *L);
static int l_channel_result(lua_State *L);
static int l_channel_alive(lua_State *L);
static const luaL_Reg CHANNEL_METHODS[] = {{"send", l_channel_send},
                                           {"wait", l_channel_wait},
                                           {"result", l_channel_result},
                                           {"alive", l_channel_alive},
                                           {NULL, NULL}};
static const luagent_handle_class CHANNEL = {"luagent.engine_io.runner", "runner channel", CHANNEL_METHODS,
                                             channel_close, channel_tostring};

/* ---- results and their waiters ---- */

static runner_result *find_result(runner_channel *ch, long long id) {
  for (runner_result *r = ch->results; r; r = r->next)
    if (r->id == id) return r;
  return NULL;
}

/* Wakes the task waiting for r, if any (it finds out why itself). */
static void wake_waiter(runner_result *r) {
  result_wait *w = r->waiter;
  if (!w) return;
  loop_timer_stop(w->lp, &w->timer);
  wait_slot_complete(&w->slot);
}

static void detach_waiter(runner_result *r) {
  if (r->waiter) r->waiter->result = NULL;
  r->waiter = NULL;
}

static void free_result(runner_result *r) {
  wake_waiter(r);
  detach_waiter(r);
  capped_free(&r->out[DOCKER_STDOUT]);
  capped_free(&r->out[DOCKER_STDERR]);
  buf_free(&r->failure);
  free(r);
}

/* Removes command id from the channel's list; NULL if it has none. */
static runner_result *take_result(runner_channel *ch, long long id) {
  runner_result **link = &ch->results;
  while (*link && (*link)->id != id) link = &(*link)->next;
  runner_result *r = *link;
  if (r) *link = r->next;
  return r;
}

static void push_result(lua_State *L, const runner_result *r) {
  int truncated = 0;
  lua_createtable(L, 0, 9);
  lengine_set_output(L, &r->out[DOCKER_STDOUT], "stdout", "stdout_bytes", &truncated);
  lengine_set_output(L, &r->out[DOCKER_STDERR], "stderr", "stderr_bytes", &truncated);
  lua_pushboolean(L, truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushboolean(L, r->done);
  lua_setfield(L, -2, "done");
  if (r->done) {
    lua_pushinteger(L, r->code);
    lua_setfield(L, -2, "exit_code");
    lua_pushstring(L, r->flags);
    lua_setfield(L, -2, "flags");
  }
  if (r->failure.len) {
    lua_pushlstring(L, r->failure.data, r->failure.len);
    lua_setfield(L, -2, "failure");
  }
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

/* ---- what the runner says ---- */

static void on_runner_ready(void *ctx, const char *version) {
  (void)version;
  runner_channel *ch = ctx;
  ch->ready = 1;
  wait_slot_complete(&ch->ready_slot);
}

static void on_runner_output(void *ctx, long long id, int stream, const char *data, size_t n) {
  runner_result *r = find_result(ctx, id);
  if (r) capped_write(&r->out[stream], data, n);
}

static void on_runner_failed(void *ctx, long long id, const char *data, size_t n) {
  runner_result *r = find_result(ctx, id);
  if (r) buf_append(&r->failure, data, n);
}

static void on_runner_exited(void *ctx, long long id, int code, const char *flags) {
  runner_result *r = find_result(ctx, id);
  if (!r) return;
  r->done = 1;
  r->code = code;
  snprintf(r->flags, sizeof r->flags, "%s", flags);
  wake_waiter(r);
}

static const runner_events RUNNER_EVENTS = {on_runner_ready, on_runner_output, on_runner_failed,
                                            on_runner_exited};

/* The connection is over: every waiter wakes and finds out why. */
static void channel_ended(runner_channel *ch, const char *why) {
  if (ch->ended) return;
  ch->ended = 1;
  snprintf(ch->reason, sizeof ch->reason, "%s", why ? why : "the runner ended");
  loop_timer_stop(ch->lp, &ch->ready_timer);
  wait_slot_complete(&ch->ready_slot);
  for (runner_result *r = ch->results; r; r = r->next) wake_waiter(r);
}

static void attach_open(void *ctx) { (void)ctx; }

static int attach_data(void *ctx, int stream, const char *data, size_t n) {
  runner_channel *ch = ctx;
  if (stream == DOCKER_STDERR) return capped_write(&ch->diagnostics, data, n);
  if (runner_parser_feed(&ch->parser, data, n, &RUNNER_EVENTS, ch) != 0) {
    char why[300];
    snprintf(why, sizeof why, "the runner said something outside its protocol: %.200s",
             ch->parser.line.data ? ch->parser.line.data : "");
    channel_ended(ch, why);
    return -1;
  }
  return 0;
}

static void attach_close(void *ctx, const char *why) { channel_ended(ctx, why); }

static const attach_callbacks ATTACH_CALLBACKS = {attach_open, attach_data, attach_close};

/* Pushes nil, {kind = "runner", message}: why the runner is gone, with the
 * end of what it printed on stderr. */
static int channel_failure(lua_State *L, runner_channel *ch) {
  buf diag = BUF_INIT;
  capped_result(&ch->diagnostics, &diag);
  const char *tail = diag.len > 400 ? diag.data + diag.len - 400 : diag.data;
  lua_pushlstring(L, tail ? tail : "", diag.len > 400 ? 400 : diag.len);
  buf_free(&diag);
  luagent_fail(L, "runner", "the sandbox runner is gone: %s%s%s", ch->reason, lua_rawlen(L, -1) ? "; it said: " : "",
               lua_tostring(L, -1));
  lua_remove(L, -3);
  return 2;
}

/* ---- the handle ---- */

/* Idempotent; never waits. Ends the connection, wakes every waiter, and
 * keeps what the commands printed as Lua tables for result(id). */
static int channel_close(lua_State *L) {
  runner_channel *ch = luagent_check_handle(L, 1, &CHANNEL);
  if (ch->handle.closed) return 0;
  ch->handle.closed = 1;
  docker_attach_free(ch->attach);
  ch->attach = NULL;
  channel_ended(ch, "closed by the host");
  lua_newtable(L);
  while (ch->results) {
    runner_result *r = ch->results;
    ch->results = r->next;
    push_result(L, r);
    lua_rawseti(L, -2, (lua_Integer)r->id);
    free_result(r);
  }
  lua_setiuservalue(L, 1, UV_CLOSED_RESULTS);
  runner_parser_free(&ch->parser);
  capped_free(&ch->diagnostics);
  return 0;
}

static int channel_tostring(lua_State *L) {
  runner_channel *ch = luagent_check_handle(L, 1, &CHANNEL);
  lua_pushfstring(L, "%s (%s)", CHANNEL.what, ch->handle.closed ? "closed" : ch->ended ? "ended" : "open");
  return 1;
}

static void ready_timeout(loop_timer *t) {
  runner_channel *ch = (runner_channel *)((char *)t - offsetof(runner_channel, ready_timer));
  if (!ch->ready) channel_ended(ch, "it did not say it was ready in time");
}

static int runner_ready_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  runner_channel *ch = (runner_channel *)ctx;
  luagent_check_cancelled(L, &ch->ready_slot);
  luagent_check_open(L, 2, &CHANNEL);
  loop_timer_stop(ch->lp, &ch->ready_timer);
  if (!ch->ready) return channel_failure(L, ch);
  lua_settop(L, 2);
  return 1;
}

/* engine_io.runner{unix_socket, path, body, timeout} -> channel | nil, err */
int lrunner_open(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *socket_path = opt_string(L, 1, "unix_socket", NULL, NULL);
  const char *path = opt_string(L, 1, "path", NULL, NULL);
  const char *body = opt_string(L, 1, "body", "{\"Detach\":false,\"Tty\":false}", NULL);
  luaL_argcheck(L, socket_path && path, 1, "options 'unix_socket' and 'path' are required");
  runner_channel *ch = luagent_new_handle(L, &CHANNEL, sizeof *ch, 1);
  ch->lp = host_of(L)->loop;
  runner_parser_init(&ch->parser);
  capped_init(&ch->diagnostics, 65536);
  wait_slot_init(&ch->ready_slot, NULL);
  loop_timer_init(&ch->ready_timer, ready_timeout);
  char err[512];
  ch->attach = docker_attach_start(ch->lp, socket_path, path, body, &ATTACH_CALLBACKS, ch, err, sizeof err);
  if (!ch->attach) return luagent_fail(L, "docker_unreachable", "%s", err);
  loop_timer_start(ch->lp, &ch->ready_timer, opt_number(L, 1, "timeout", 15));
  return host_await(L, &ch->ready_slot, (lua_KContext)ch, runner_ready_k);
}

/* channel:send(id, message [, max_output]) -> true | nil, err */
static int l_channel_send(lua_State *L) {
  runner_channel *ch = luagent_check_open(L, 1, &CHANNEL);
  long long id = luaL_checkinteger(L, 2);
  size_t n;
  const char *message = luaL_checklstring(L, 3, &n);
  size_t cap = (size_t)luaL_optinteger(L, 4, 1 << 20);
  if (ch->ended) return channel_failure(L, ch);
  if (id > 0 && !find_result(ch, id)) {
    runner_result *r = calloc(1, sizeof *r);
    if (!r) return luaL_error(L, "out of memory");
    r->id = id;
    capped_init(&r->out[DOCKER_STDOUT], cap);
    capped_init(&r->out[DOCKER_STDERR], cap);
    r->next = ch->results;
    ch->results = r;
  }
  if (docker_attach_write(ch->attach, message, n) != 0) return channel_failure(L, ch);
  lua_pushboolean(L, 1);
  return 1;
}

static int channel_wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  result_wait *w = (result_wait *)ctx;
  runner_result *r = w->result;
  wait_finish(w);
  luagent_check_cancelled(L, &w->slot);
  runner_channel *ch = luagent_check_handle(L, 1, &CHANNEL);
  if (ch->handle.closed)
    return luagent_fail(L, "closed", "the runner channel was closed while waiting for command %lld", w->id);
  if (r && r->done) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (ch->ended) return channel_failure(L, ch);
  lua_pushboolean(L, 0);
  return 1;
}

/* channel:wait(id [, seconds]) -> true | false | nil, err */
static int l_channel_wait(lua_State *L) {
  runner_channel *ch = luagent_check_open(L, 1, &CHANNEL);
  long long id = luaL_checkinteger(L, 2);
  runner_result *r = find_result(ch, id);
  lua_Number seconds = luaL_optnumber(L, 3, -1);
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  if (r->waiter) return luaL_error(L, "command %d: another task is already waiting for it", (int)id);
  lua_settop(L, 1);
  result_wait *w = lua_newuserdatauv(L, sizeof *w, 0);
  memset(w, 0, sizeof *w);
  luaL_setmetatable(L, WAIT_CLASS);
  w->lp = ch->lp;
  w->id = id;
  loop_timer_init(&w->timer, wait_timer);
  wait_slot_init(&w->slot, wait_cancel);
  w->result = r;
  r->waiter = w;
  if (r->done || ch->ended) return channel_wait_k(L, LUA_OK, (lua_KContext)w);
  if (seconds >= 0) loop_timer_start(ch->lp, &w->timer, seconds);
  return host_await(L, &w->slot, (lua_KContext)w, channel_wait_k);
}

/* channel:result(id) -> {...}; forgets the id. Also after close. */
static int l_channel_result(lua_State *L) {
  runner_channel *ch = luagent_check_handle(L, 1, &CHANNEL);
  long long id = luaL_checkinteger(L, 2);
  if (ch->handle.closed) {
    lua_getiuservalue(L, 1, UV_CLOSED_RESULTS);
    luaL_argcheck(L, lua_rawgeti(L, -1, (lua_Integer)id) != LUA_TNIL, 2, "no command with this id was sent");
    lua_pushnil(L);
    lua_rawseti(L, -3, (lua_Integer)id);
    return 1;
  }
  runner_result *r = find_result(ch, id);
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  push_result(L, r);
  free_result(take_result(ch, id));
  return 1;
}

/* channel:alive() -> true | false, reason. Also after close. */
static int l_channel_alive(lua_State *L) {
  runner_channel *ch = luagent_check_handle(L, 1, &CHANNEL);
  lua_pushboolean(L, !ch->ended);
  if (!ch->ended) return 1;
  lua_pushstring(L, ch->reason);
  return 2;
}

void lrunner_register(lua_State *L) {
  static const luaL_Reg wait_methods[] = {{"__gc", wait_gc}, {NULL, NULL}};
  luagent_register_handle(L, &CHANNEL);
  luagent_new_class(L, WAIT_CLASS, wait_methods);
}

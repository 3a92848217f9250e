/* lua_exec_stream: the exec stream of luagent.engine_stream — the output of one
 * Docker exec (POST /exec/ID/start), demultiplexed and capped as it arrives.
 *
 *   engine_stream.exec_start(opts) -> stream   opts: http options (url,
 *       unix_socket, TLS, body) + max_output (bytes kept per stream)
 *     stream:wait([seconds]) -> true when the command's output ended (or the
 *                               stream was aborted), false if the seconds
 *                               passed first (yields)
 *     stream:result() -> {stdout, stderr, truncated, stdout_bytes, stderr_bytes}
 *                      | nil, err   (after wait returned true, or after abort)
 *     stream:abort()    stop reading; result() then gives the output so far
 *     stream:close()    stop the transfer and free the output (also <close>
 *                       and __gc); idempotent
 *     tostring(stream) -> "exec stream (running|ended|aborted|closed)"
 * After close every method raises "exec stream is closed"; a task waiting in
 * wait() when another closes the stream wakes and raises the same. One task
 * waits at a time: a second waiter raises. */
#include <lauxlib.h>
#include <string.h>

#include "host.h"
#include "lua_docker_wire.h"
#include "lua_engine_stream.h"
#include "lua_http.h"
#include "lua_util.h"

typedef struct exec_stream {
  luagent_handle handle;
  http_xfer *x;
  docker_capture capture;
  int bad_frame;
  int aborted; /* stopped by us: the output so far is the result */
  wait_slot slot;
  loop_timer timer;
  loop *lp;
} exec_stream;

static int stream_close(lua_State *L);
static int stream_tostring(lua_State *L);
static int l_stream_wait(lua_State *L);
static int l_stream_result(lua_State *L);
static int l_stream_abort(lua_State *L);
static const luaL_Reg STREAM_METHODS[] = {
    {"wait", l_stream_wait}, {"result", l_stream_result}, {"abort", l_stream_abort}, {NULL, NULL}};
static const luagent_handle_class STREAM = {"luagent.engine_stream.exec_stream", "exec stream", STREAM_METHODS,
                                            stream_close, stream_tostring};

static size_t exec_sink(void *ctx, const char *data, size_t n) {
  exec_stream *s = ctx;
  if (docker_capture_feed(&s->capture, data, n) != 0) {
    s->bad_frame = 1;
    return 0;
  }
  return n;
}

static void exec_done(http_xfer *x, void *ctx) {
  (void)x;
  exec_stream *s = ctx;
  loop_timer_stop(s->lp, &s->timer);
  wait_slot_complete(&s->slot);
}

static void exec_timer(loop_timer *t) {
  exec_stream *s = (exec_stream *)((char *)t - offsetof(exec_stream, timer));
  wait_slot_complete(&s->slot);
}

static void exec_cancel(wait_slot *slot) {
  exec_stream *s = (exec_stream *)((char *)slot - offsetof(exec_stream, slot));
  loop_timer_stop(s->lp, &s->timer);
}

/* Idempotent; never waits. A task waiting in wait() is woken and raises. */
static int stream_close(lua_State *L) {
  exec_stream *s = luagent_check_handle(L, 1, &STREAM);
  if (!luagent_handle_release(s)) return 0;
  loop_timer_stop(s->lp, &s->timer);
  http_free(s->x);
  s->x = NULL;
  docker_capture_free(&s->capture);
  wait_slot_complete(&s->slot);
  return 0;
}

static int stream_tostring(lua_State *L) {
  exec_stream *s = luagent_check_handle(L, 1, &STREAM);
  const char *state = s->handle.closed ? "closed" : s->aborted ? "aborted" : http_finished(s->x) ? "ended" : "running";
  lua_pushfstring(L, "%s (%s)", STREAM.what, state);
  return 1;
}

/* engine_stream.exec_start(opts) -> stream */
int lexec_start(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  http_request req;
  lhttp_read_options(L, 1, &req);
  static const char *const headers[] = {"Content-Type: application/json", NULL};
  req.headers = headers;
  req.method = "POST";
  req.sink_success_only = 1;
  size_t cap = (size_t)opt_integer(L, 1, "max_output", 1 << 20);
  exec_stream *s = luagent_new_handle(L, &STREAM, sizeof *s, 1); /* closed until it streams */
  s->lp = host_of(L)->loop;
  docker_capture_init(&s->capture, cap);
  loop_timer_init(&s->timer, exec_timer);
  wait_slot_init(&s->slot, exec_cancel);
  lua_getfield(L, 1, "body");
  lua_setiuservalue(L, -2, 1); /* the request body must outlive the transfer */
  http_sink sink = {exec_sink, s};
  char err[256];
  s->x = http_start(s->lp, &req, &sink, exec_done, s, err, sizeof err);
  if (!s->x) return luaL_error(L, "%s", err); /* a stream without a transfer is never open */
  luagent_handle_open(s);
  return 1;
}

static int stream_wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  exec_stream *s = (exec_stream *)ctx;
  sched_check_cancelled(L, &s->slot);
  if (s->handle.closed) return luaL_error(L, "%s is closed", STREAM.what);
  lua_pushboolean(L, http_finished(s->x) || s->aborted);
  return 1;
}

/* stream:wait([seconds]) -> finished? */
static int l_stream_wait(lua_State *L) {
  exec_stream *s = luagent_check_open(L, 1, &STREAM);
  lua_Number seconds = luaL_optnumber(L, 2, -1);
  lua_settop(L, 1);
  if (http_finished(s->x) || s->aborted) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (!s->slot.done && s->slot.task)
    return luaL_error(L, "%s: another task is already waiting for it", STREAM.what);
  wait_slot_init(&s->slot, exec_cancel);
  if (seconds >= 0) loop_timer_start(s->lp, &s->timer, seconds);
  return sched_await(L, &s->slot, (lua_KContext)s, stream_wait_k);
}

/* stream:result() -> {stdout, stderr, truncated, stdout_bytes, stderr_bytes} | nil, err */
static int l_stream_result(lua_State *L) {
  exec_stream *s = luagent_check_open(L, 1, &STREAM);
  if (!http_finished(s->x) && !s->aborted)
    return luaL_error(L, "stream:result() before the stream ended (call wait first)");
  if (s->bad_frame) return luagent_fail(L, "protocol", "malformed exec stream from the Docker engine");
  long status = http_status(s->x);
  if (!s->aborted && (!lwire_is_success(status) || (http_failed(s->x) && status == 0)))
    return lwire_push_failure(L, s->x);
  int truncated = 0;
  lua_createtable(L, 0, 5);
  lwire_set_output(L, &s->capture.out[DOCKER_STDOUT], "stdout", "stdout_bytes", &truncated);
  lwire_set_output(L, &s->capture.out[DOCKER_STDERR], "stderr", "stderr_bytes", &truncated);
  lua_pushboolean(L, truncated);
  lua_setfield(L, -2, "truncated");
  return 1;
}

/* stream:abort(): a task waiting in wait() wakes (wait returns true). */
static int l_stream_abort(lua_State *L) {
  exec_stream *s = luagent_check_open(L, 1, &STREAM);
  if (!http_finished(s->x)) s->aborted = 1;
  http_abort(s->x);
  loop_timer_stop(s->lp, &s->timer);
  wait_slot_complete(&s->slot);
  return 0;
}

void lexec_register(lua_State *L) { luagent_register_handle(L, &STREAM); }

/* lua_sched: luagent.sched, the Lua face of the scheduler (sched.c): tasks
 * over the event loop (src/core/loop.c, which is only the loop). Its old name,
 * luagent.loop, still loads it for one release.
 *
 *   sched.spawn(fn, ...)   -> task          run fn(...) concurrently
 *   sched.sleep(seconds)   yield to other tasks for that long
 *   sched.yield()          let other ready tasks run
 *   sched.now()            monotonic seconds
 *   sched.current()        -> task | nil    the task running now
 *   sched.context()        -> value | nil   the running task's context
 *   sched.spawn_in(ctx, fn, ...) -> task    run fn(...) with context ctx
 *   sched.cancelled()      -> err | nil     the running task was asked to stop
 *                                          (Ctrl-C, SIGTERM, task:cancel()): its
 *                                          "cancelled" error, even after a wait
 *                                          raised it once and it was caught
 *
 *   task:wait()           -> ... | nil, err  its results, or its error
 *   task:cancel()         it stops with a "cancelled" error at its next wait
 *   task:status()         "ready" | "running" | "waiting" | "done" | "failed"
 *   task:close()          cancels it if unfinished; the handle is closed
 *   tostring(task)        "task 3 (waiting)", "task 3 (closed)"
 *
 * A task handle follows the handle rule: `close` is idempotent and bound to
 * __close too, so `local t <close> = sched.spawn(f)` stops f when the scope
 * ends; wait, cancel and status on a closed handle raise "task is closed".
 * Its __gc only frees memory: it never cancels or resumes anything (the
 * scheduler keeps an unfinished task's handle alive anyway). Closing does
 * not hide a failure: a task that failed and was never waited for is still
 * reported at the end of the run, and the host still reads a closed main
 * task's outcome (sched.h). A cancelled error's message says why it was
 * cancelled (Ctrl-C, the main task failed, task:cancel(), task:close()).
 *
 * A task's context is one Lua value it carries (luagent.run keeps the
 * recipe run there): loop.spawn_in gives one, and a task spawned by a task
 * with a context inherits it. Outside a task, or for a task spawned without
 * one, loop.context() is nil. */
#include <stddef.h>

#include "loop.h"
#include "lua_errors.h"
#include "lua_util.h"
#include "sched.h"

static const char TASK_WHAT[] = "task";

/* The open task at idx; raises "task is closed" for a closed handle. */
static task *check_open_task(lua_State *L, int idx) {
  task *t = sched_check_task(L, idx);
  if (task_is_closed(t)) luaL_error(L, "%s is closed", TASK_WHAT);
  return t;
}

/* loop.spawn(fn, ...) -> task */
static int l_spawn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  sched_spawn(L, lua_gettop(L) - 1);
  return 1;
}

/* loop.spawn_in(ctx, fn, ...) -> task   (ctx may be nil: no context) */
static int l_spawn_in(lua_State *L) {
  luaL_checkany(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  sched_spawn(L, lua_gettop(L) - 2);
  lua_pushvalue(L, 1);
  task_set_context(L, -2);
  return 1;
}

/* loop.context() -> the running task's context | nil */
static int l_context(lua_State *L) {
  sched_push_context(L);
  return 1;
}

/* task:wait() -> results... | nil, err */
static int l_task_wait(lua_State *L) {
  check_open_task(L, 1);
  return task_wait(L);
}

/* task:cancel() */
static int l_task_cancel(lua_State *L) {
  task_cancel(check_open_task(L, 1), SCHED_WHY_CANCEL);
  return 0;
}

/* task:status() -> "ready" | "running" | "waiting" | "done" | "failed" */
static int l_task_status(lua_State *L) {
  lua_pushstring(L, task_status_name(task_status_of(check_open_task(L, 1))));
  return 1;
}

/* task:close(): idempotent; also __close. */
static int l_task_close(lua_State *L) {
  task_close(sched_check_task(L, 1));
  return 0;
}

static int l_task_tostring(lua_State *L) {
  task *t = sched_check_task(L, 1);
  const char *state = task_is_closed(t) ? "closed" : task_status_name(task_status_of(t));
  lua_pushfstring(L, "%s %d (%s)", TASK_WHAT, (int)task_id(t), state);
  return 1;
}

/* ---- sleep: a timer and a wait slot, as a handle on the sleeping C call's stack ---- */

typedef struct sleeper {
  luagent_handle handle;
  loop_timer timer;
  wait_slot slot;
  loop *lp;
} sleeper;

static int l_sleeper_close(lua_State *L);
static const luaL_Reg NO_METHODS[] = {{NULL, NULL}};
static const luagent_handle_class SLEEPER = {
    .name = "luagent.sleeper", .what = "sleeper", .methods = NO_METHODS, .close = l_sleeper_close};

static void sleeper_fire(loop_timer *timer) {
  sleeper *s = (sleeper *)((char *)timer - offsetof(sleeper, timer));
  wait_slot_complete(&s->slot);
}

static void sleeper_stop(sleeper *s) {
  if (!luagent_handle_release(s)) return;
  loop_timer_stop(s->lp, &s->timer);
}

static void sleeper_cancel(wait_slot *slot) {
  sleeper_stop((sleeper *)((char *)slot - offsetof(sleeper, slot)));
}

/* close, __close and __gc: stops the timer (loop bookkeeping, no I/O). */
static int l_sleeper_close(lua_State *L) {
  sleeper_stop(luagent_check_handle(L, 1, &SLEEPER));
  return 0;
}

static int sleep_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  sleeper *s = (sleeper *)ctx;
  sched_check_cancelled(L, &s->slot);
  return 0;
}

/* loop.sleep(seconds) */
static int l_sleep(lua_State *L) {
  lua_Number seconds = luaL_checknumber(L, 1);
  sleeper *s = luagent_new_handle(L, &SLEEPER, sizeof *s, 0);
  s->lp = sched_loop(sched_of(L));
  loop_timer_init(&s->timer, sleeper_fire);
  wait_slot_init(&s->slot, sleeper_cancel);
  loop_timer_start(s->lp, &s->timer, seconds);
  luagent_handle_open(s);
  return sched_await(L, &s->slot, (lua_KContext)s, sleep_k);
}

static int l_yield(lua_State *L) { return task_yield(L); }

static int l_now(lua_State *L) {
  lua_pushnumber(L, loop_now());
  return 1;
}

/* loop.cancelled() -> err | nil */
static int l_cancelled(lua_State *L) {
  const char *why = sched_stopping(L);
  if (!why) {
    lua_pushnil(L);
    return 1;
  }
  luagent_push_error(L, "cancelled", "%s", why);
  return 1;
}

/* loop.current() -> task | nil */
static int l_current(lua_State *L) { return sched_push_current(L); }

/* task:background() -> task   the run does not wait for it to end */
static int l_task_background(lua_State *L) {
  task_set_background(check_open_task(L, 1));
  lua_settop(L, 1);
  return 1;
}

static const luaL_Reg TASK_METHODS[] = {{"wait", l_task_wait},     {"cancel", l_task_cancel},
                                        {"status", l_task_status}, {"background", l_task_background},
                                        {NULL, NULL}};
static const luagent_handle_class TASK = {.name = SCHED_TASK_CLASS,
                                          .what = TASK_WHAT,
                                          .methods = TASK_METHODS,
                                          .close = l_task_close,
                                          .tostring = l_task_tostring};

int luaopen_luagent_sched(lua_State *L) {
  static const luaL_Reg funcs[] = {{"spawn", l_spawn},       {"spawn_in", l_spawn_in}, {"sleep", l_sleep},
                                   {"yield", l_yield},       {"now", l_now},           {"current", l_current},
                                   {"context", l_context},   {"cancelled", l_cancelled},
                                   {NULL, NULL}};
  luagent_register_handle(L, &TASK);
  luaL_getmetatable(L, SCHED_TASK_CLASS); /* no __gc: a task holds no memory outside Lua */
  lua_pushnil(L);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luagent_register_handle(L, &SLEEPER);
  luaL_newlib(L, funcs);
  return 1;
}

/* sched_task: a task handle's life on the scheduler's side (see sched.h):
 * spawning a task, the body its coroutine runs (a yieldable pcall keeping a
 * traceback), the handle's accessors, and the task-local context. The
 * scheduler proper — ready queue, waits, cancelling, task:wait() — is
 * sched.c; both share sched_internal.h.
 *   one unit: sched.c sched_task.c
 *
 * The context is the fourth uservalue of the handle (UV_CONTEXT); a task
 * spawned while a task with a context runs gets the same value. A task
 * without one pays a flag test at its spawn. */
#include "sched.h"

#include <lauxlib.h>
#include <string.h>

#include "sched_internal.h"

static const char *const STATUS_NAMES[] = {"ready", "running", "waiting", "done", "failed"};

/* ---- the task body, run inside the coroutine ---- */

/* Message handler: keeps a traceback for the report, returns the error as is
 * so error tables reach task:wait() unchanged. */
static int capture_traceback(lua_State *L) {
  task *t = sched_of(L)->current;
  lua_settop(L, 1);
  if (t && t->co == L) {
    if (lua_type(L, 1) == LUA_TTABLE) lua_getfield(L, 1, "message");
    else lua_pushvalue(L, 1);
    task_keep_traceback(L, t, lua_tostring(L, -1), 1);
    lua_settop(L, 1);
  }
  return 1;
}

static int task_body_k(lua_State *L, int status, lua_KContext ctx) {
  (void)ctx;
  if (status == LUA_OK || status == LUA_YIELD) {
    lua_pushboolean(L, 1);
    lua_replace(L, 1); /* the message handler's slot becomes `true` */
    return lua_gettop(L);
  }
  lua_pushboolean(L, 0);
  lua_insert(L, -2);
  return 2;
}

static int task_body(lua_State *L) {
  int nargs = lua_gettop(L) - 1;
  lua_pushcfunction(L, capture_traceback);
  lua_insert(L, 1);
  int status = lua_pcallk(L, nargs, LUA_MULTRET, 1, 0, task_body_k);
  return task_body_k(L, status, 0);
}

task *sched_spawn(lua_State *L, int nargs) {
  sched *s = sched_of(L);
  int fn = lua_gettop(L) - nargs;
  luaL_checktype(L, fn, LUA_TFUNCTION);
  task *t = lua_newuserdatauv(L, sizeof *t, NUV - 1);
  memset(t, 0, sizeof *t);
  t->ref = LUA_NOREF;
  luaL_setmetatable(L, SCHED_TASK_CLASS);
  if (s->current && s->current->has_context) { /* it inherits its spawner's context */
    sched_push_context(L);
    task_set_context(L, -2);
  }
  t->co = lua_newthread(L);
  if (!lua_checkstack(t->co, nargs + 2)) luaL_error(L, "too many arguments for a task");
  lua_setiuservalue(L, -2, UV_THREAD);
  t->s = s;
  t->id = ++s->next_task_id;
  lua_pushvalue(L, -1);
  t->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_insert(L, fn); /* handle below the function */
  lua_pushcfunction(t->co, task_body);
  lua_xmove(L, t->co, nargs + 1);
  t->nstart = nargs + 1;
  sched_link_live(s, t);
  task_make_ready(t);
  return t;
}

/* ---- one task ---- */

task *sched_check_task(lua_State *L, int idx) { return luaL_checkudata(L, idx, SCHED_TASK_CLASS); }
task_status task_status_of(const task *t) { return t->state; }
const char *task_status_name(task_status st) { return STATUS_NAMES[st]; }
unsigned task_id(const task *t) { return t->id; }
int task_is_closed(const task *t) { return t->closed; }

void task_close(task *t) {
  if (t->closed) return;
  t->closed = 1;
  task_cancel(t, SCHED_WHY_CLOSE);
}

int sched_push_current(lua_State *L) {
  task *t = sched_of(L)->current;
  if (!t || t->ref == LUA_NOREF) return 0;
  task_push_handle(L, t);
  return 1;
}

void sched_push_context(lua_State *L) {
  task *t = sched_of(L)->current;
  luaL_checkstack(L, 2, "no room for the task's context");
  if (!t || !t->has_context) {
    lua_pushnil(L);
    return;
  }
  task_push_handle(L, t); /* a running task's handle is always referenced */
  lua_getiuservalue(L, -1, UV_CONTEXT);
  lua_remove(L, -2);
}

void task_set_context(lua_State *L, int idx) {
  task *t = sched_check_task(L, idx);
  idx = lua_absindex(L, idx);
  t->has_context = !lua_isnil(L, -1);
  lua_setiuservalue(L, idx, UV_CONTEXT);
}

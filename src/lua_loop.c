/* lua_loop: tasks and the scheduler, as luagent.loop.
 *
 *   loop.spawn(fn, ...)   -> task          run fn(...) concurrently
 *   task:wait()           -> ... | nil, err  its results, or its error
 *   task:cancel()         stop it at its next wait
 *   task:status()         "ready" | "running" | "waiting" | "done" | "failed"
 *   loop.sleep(seconds)   yield to other tasks for that long
 *   loop.yield()          let other ready tasks run
 *   loop.now()            monotonic seconds
 *
 * A task is a coroutine whose body runs under a yieldable pcall, so an error
 * unwinds inside the task (its <close> handlers may still do cooperative I/O)
 * and is kept for task:wait(). Waiting primitives call host_await(): inside a
 * task they yield to the scheduler; elsewhere (the REPL, a user coroutine, a
 * __gc) they drive the scheduler in place until their operation completes. */
#include "lua_loop.h"

#include <lauxlib.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_util.h"

enum task_state { T_READY, T_RUNNING, T_WAITING, T_DONE, T_FAILED };
static const char *const STATE_NAMES[] = {"ready", "running", "waiting", "done", "failed"};

static const char TASK_CLASS[] = "luagent.task";
static const char UNOBSERVED_KEY[] = "luagent.unobserved_failures";

struct task {
  host *h;
  lua_State *co;
  int ref;            /* registry ref keeping the handle alive until finished */
  int nstart;         /* values on the fresh coroutine's stack for the first resume */
  enum task_state state;
  int cancel_pending; /* cancel at the next wait */
  int observed;       /* someone took its result or error */
  int deadlocked;     /* its wait was broken because nothing could wake it */
  unsigned id;
  wait_slot *waiting; /* what it waits for, when T_WAITING */
  task *next_ready;
  task *prev_live, *next_live;
  task *waiters;      /* tasks blocked in wait() on this one */
  task *next_waiter;
  task *joining;      /* the task this one waits for */
  wait_slot join;
  char *traceback;    /* set when the task failed */
};

/* uservalue slots of a task handle */
enum { UV_THREAD = 1, UV_RESULT = 2 };

/* ---- wait slots ---- */

void wait_slot_init(wait_slot *slot, void (*cancel)(wait_slot *slot)) {
  slot->task = NULL;
  slot->done = 0;
  slot->cancelled = 0;
  slot->cancel = cancel;
}

static void make_ready(task *t) {
  host *h = t->h;
  t->state = T_READY;
  t->next_ready = NULL;
  if (h->ready_tail)
    h->ready_tail->next_ready = t;
  else
    h->ready_head = t;
  h->ready_tail = t;
}

void wait_slot_complete(wait_slot *slot) {
  if (slot->done) return;
  slot->done = 1;
  task *t = slot->task;
  if (t && t->state == T_WAITING && t->waiting == slot) {
    t->waiting = NULL;
    make_ready(t);
  }
}

static void cancel_slot(wait_slot *slot) {
  if (slot->done) return;
  slot->cancelled = 1;
  if (slot->cancel) slot->cancel(slot);
  wait_slot_complete(slot);
}

void luagent_check_cancelled(lua_State *L, const wait_slot *slot) {
  if (!slot->cancelled) return;
  host *h = host_of(L);
  luagent_push_error(L, "cancelled", "%s",
                     h->interrupted ? "interrupted (Ctrl-C): the run is stopping"
                                    : "the task was cancelled");
  lua_error(L);
}

/* ---- the scheduler ---- */

static void link_live(host *h, task *t) {
  t->prev_live = NULL;
  t->next_live = h->live;
  if (h->live) h->live->prev_live = t;
  h->live = t;
  h->nlive++;
}

static void unlink_live(host *h, task *t) {
  if (t->prev_live)
    t->prev_live->next_live = t->next_live;
  else
    h->live = t->next_live;
  if (t->next_live) t->next_live->prev_live = t->prev_live;
  h->nlive--;
}

static task *pop_ready(host *h) {
  task *t = h->ready_head;
  if (!t) return NULL;
  h->ready_head = t->next_ready;
  if (!h->ready_head) h->ready_tail = NULL;
  return t;
}

static void push_handle(lua_State *L, task *t) { lua_rawgeti(L, LUA_REGISTRYINDEX, t->ref); }

/* Keeps a failed task nobody waited for, so its error is reported at the end. */
static void remember_unobserved(lua_State *L, int handle) {
  lua_getfield(L, LUA_REGISTRYINDEX, UNOBSERVED_KEY);
  lua_pushvalue(L, handle);
  lua_pushboolean(L, 1);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

static void forget_unobserved(lua_State *L, int handle) {
  lua_getfield(L, LUA_REGISTRYINDEX, UNOBSERVED_KEY);
  lua_pushvalue(L, handle);
  lua_pushnil(L);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* The coroutine returned normally: its stack holds ok, values... (from task_body). */
static void finish_task(host *h, task *t, int nres) {
  lua_State *L = h->L;
  lua_State *co = t->co;
  int ok = nres > 0 && lua_toboolean(co, -nres);
  luaL_checkstack(L, nres + 3, "too many results from a task");
  push_handle(L, t);
  int handle = lua_gettop(L);
  lua_createtable(L, nres, 1);
  lua_xmove(co, L, nres);
  for (int i = nres; i >= 1; i--) lua_rawseti(L, handle + 1, i); /* pops values in reverse */
  lua_pushinteger(L, nres);
  lua_setfield(L, -2, "n");
  lua_setiuservalue(L, handle, UV_RESULT);
  lua_pushnil(L);
  lua_setiuservalue(L, handle, UV_THREAD); /* the coroutine can now be collected */
  t->co = NULL;
  t->state = ok ? T_DONE : T_FAILED;
  unlink_live(h, t);
  if (!ok && !t->waiters) remember_unobserved(L, handle);
  for (task *w = t->waiters; w; w = w->next_waiter) {
    w->joining = NULL;
    t->observed = 1;
    wait_slot_complete(&w->join);
  }
  t->waiters = NULL;
  luaL_unref(L, LUA_REGISTRYINDEX, t->ref);
  t->ref = LUA_NOREF;
  lua_pop(L, 1);
}

/* An error escaped task_body itself (an error inside a __close handler while
 * unwinding): record it as the task's failure. */
static void finish_task_with_escaped_error(host *h, task *t) {
  lua_State *co = t->co;
  lua_pushboolean(co, 0);
  lua_insert(co, -2);
  if (!t->traceback) {
    luaL_traceback(co, co, lua_tostring(co, -1), 0);
    t->traceback = strdup(lua_tostring(co, -1));
    lua_pop(co, 1);
  }
  finish_task(h, t, 2);
}

static void resume_task(host *h, task *t) {
  int nargs = t->nstart;
  t->nstart = 0;
  task *saved = h->current;
  h->current = t;
  t->state = T_RUNNING;
  int nres = 0;
  int status = lua_resume(t->co, h->L, nargs, &nres);
  h->current = saved;
  if (status == LUA_YIELD) {
    lua_pop(t->co, nres);
    if (t->state == T_RUNNING) make_ready(t); /* a plain yield: let others run */
  } else if (status == LUA_OK) {
    finish_task(h, t, nres);
  } else {
    finish_task_with_escaped_error(h, t);
  }
}

/* Fails every task that waits for another task while nothing can ever wake
 * them (no ready task, no transfer, no timer): a deadlock. */
static void break_deadlock(host *h) {
  for (task *t = h->live; t; t = t->next_live) {
    if (t->state == T_WAITING && t->joining) {
      t->cancel_pending = 0;
      t->deadlocked = 1;
      cancel_slot(&t->join);
    }
  }
}

/* One step: run every ready task, else wait for the loop. Returns 0 when
 * nothing can make progress (no ready task and the loop is idle). */
static int scheduler_step(host *h) {
  if (h->interrupted && !h->cancelling) tasks_cancel_all(h, "interrupted");
  task *t = pop_ready(h);
  if (t) {
    resume_task(h, t);
    return 1;
  }
  if (loop_pending(h->loop) == 0) return 0;
  h->in_loop = 1;
  loop_run_once(h->loop, h->cancelling ? 0.2 : -1);
  h->in_loop = 0;
  if (h->cancelling && loop_now() > h->cancel_deadline) {
    fprintf(stderr, "luagent: tasks did not stop within 10 s of cancelling; exiting\n"
                    "luagent: leftover sandboxes are removed by 'luagent sandbox prune'\n");
    exit(130);
  }
  return 1;
}

void tasks_run(host *h, void *main) {
  task *m = main;
  while (h->nlive > 0) {
    if (m && m->state == T_FAILED && !h->cancelling) tasks_cancel_all(h, "the main task failed");
    if (!scheduler_step(h)) break_deadlock(h);
  }
}

static void block_until_done(lua_State *L, host *h, wait_slot *slot) {
  while (!slot->done) {
    if (h->interrupted) {
      cancel_slot(slot);
      break;
    }
    if (!scheduler_step(h)) {
      luaL_error(L, "deadlock: waiting for something that can never finish "
                    "(a task waiting for itself, or a wait outside any running task)");
    }
  }
}

int host_await(lua_State *L, wait_slot *slot, lua_KContext ctx, lua_KFunction k) {
  host *h = host_of(L);
  task *t = h->current;
  if (!slot->done) {
    if (t && t->co == L && lua_isyieldable(L)) {
      if (t->cancel_pending) {
        t->cancel_pending = 0;
        cancel_slot(slot);
        return k(L, LUA_OK, ctx);
      }
      slot->task = t;
      t->waiting = slot;
      t->state = T_WAITING;
      return lua_yieldk(L, 0, ctx, k);
    }
    block_until_done(L, h, slot);
  }
  return k(L, LUA_OK, ctx);
}

static void cancel_task(task *t) {
  if (t->state == T_WAITING && t->waiting)
    cancel_slot(t->waiting);
  else if (t->state == T_READY || t->state == T_RUNNING)
    t->cancel_pending = 1;
}

void tasks_cancel_all(host *h, const char *why) {
  (void)why;
  if (!h->cancelling) {
    h->cancelling = 1;
    h->cancel_deadline = loop_now() + 10.0;
  }
  for (task *t = h->live; t; t = t->next_live) cancel_task(t);
}

/* ---- the task body, run inside the coroutine ---- */

/* Message handler: keeps a traceback for the report, returns the error as is
 * so error tables reach task:wait() unchanged. */
static int capture_traceback(lua_State *L) {
  host *h = host_of(L);
  task *t = h->current;
  if (t && t->co == L && !t->traceback) {
    const char *msg = NULL;
    if (lua_type(L, 1) == LUA_TTABLE) {
      lua_getfield(L, 1, "message");
      msg = lua_tostring(L, -1);
      lua_pop(L, 1);
    } else {
      msg = lua_tostring(L, 1);
    }
    luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
    t->traceback = strdup(lua_tostring(L, -1));
    lua_pop(L, 1);
  }
  lua_settop(L, 1);
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

/* ---- Lua API ---- */

static task *check_task(lua_State *L, int idx) { return luaL_checkudata(L, idx, TASK_CLASS); }

void tasks_spawn(lua_State *L, int nargs) {
  host *h = host_of(L);
  int fn = lua_gettop(L) - nargs;
  luaL_checktype(L, fn, LUA_TFUNCTION);
  task *t = lua_newuserdatauv(L, sizeof *t, 2);
  memset(t, 0, sizeof *t);
  luaL_setmetatable(L, TASK_CLASS);
  t->h = h;
  t->id = ++h->next_task_id;
  t->co = lua_newthread(L);
  lua_setiuservalue(L, -2, UV_THREAD);
  lua_pushvalue(L, -1);
  t->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_insert(L, fn); /* handle below the function */
  if (!lua_checkstack(t->co, nargs + 2)) luaL_error(L, "too many arguments for a task");
  lua_pushcfunction(t->co, task_body);
  lua_xmove(L, t->co, nargs + 1);
  t->nstart = nargs + 1;
  link_live(h, t);
  make_ready(t);
}

/* loop.spawn(fn, ...) -> task */
static int l_spawn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  tasks_spawn(L, lua_gettop(L) - 1);
  return 1;
}

static int push_task_result(lua_State *L, task *t, int handle) {
  t->observed = 1;
  forget_unobserved(L, handle);
  lua_getiuservalue(L, handle, UV_RESULT);
  int result = lua_gettop(L);
  lua_getfield(L, result, "n");
  int n = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  luaL_checkstack(L, n, "too many results");
  lua_rawgeti(L, result, 1);
  int ok = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!ok) {
    lua_pushnil(L);
    lua_rawgeti(L, result, 2);
    return 2;
  }
  for (int i = 2; i <= n; i++) lua_rawgeti(L, result, i);
  return n - 1;
}

static int task_wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  task *t = (task *)ctx;
  host *h = host_of(L);
  task *self = h->current;
  if (self && self->join.cancelled && self->joining == t) {
    /* unlink ourselves: the target keeps running */
    for (task **p = &t->waiters; *p; p = &(*p)->next_waiter) {
      if (*p == self) {
        *p = self->next_waiter;
        break;
      }
    }
    self->joining = NULL;
  }
  if (t->state != T_DONE && t->state != T_FAILED) {
    if (self && self->deadlocked) {
      self->deadlocked = 0;
      return luagent_fail(L, "deadlock", "task %d can never finish: every task is waiting", (int)t->id);
    }
    luagent_check_cancelled(L, &self->join);
  }
  return push_task_result(L, t, 1);
}

/* task:wait() -> results... | nil, err */
static int l_task_wait(lua_State *L) {
  task *t = check_task(L, 1);
  lua_settop(L, 1);
  host *h = host_of(L);
  task *self = h->current;
  if (t->state == T_DONE || t->state == T_FAILED) return push_task_result(L, t, 1);
  if (self == t) return luaL_error(L, "a task cannot wait for itself");
  if (self && self->co == L && lua_isyieldable(L)) {
    wait_slot_init(&self->join, NULL);
    self->joining = t;
    self->next_waiter = t->waiters;
    t->waiters = self;
    return host_await(L, &self->join, (lua_KContext)t, task_wait_k);
  }
  /* outside a task: drive the scheduler until it finishes */
  while (t->state != T_DONE && t->state != T_FAILED) {
    if (h->interrupted) {
      luagent_push_error(L, "cancelled", "interrupted (Ctrl-C)");
      return lua_error(L);
    }
    if (!scheduler_step(h)) return luagent_fail(L, "deadlock", "task %d can never finish", (int)t->id);
  }
  return push_task_result(L, t, 1);
}

/* task:cancel(): the task stops with a "cancelled" error at its next wait. */
static int l_task_cancel(lua_State *L) {
  task *t = check_task(L, 1);
  cancel_task(t);
  return 0;
}

static int l_task_status(lua_State *L) {
  task *t = check_task(L, 1);
  lua_pushstring(L, STATE_NAMES[t->state]);
  return 1;
}

static int l_task_tostring(lua_State *L) {
  task *t = check_task(L, 1);
  lua_pushfstring(L, "task %d (%s)", (int)t->id, STATE_NAMES[t->state]);
  return 1;
}

static int l_task_gc(lua_State *L) {
  task *t = check_task(L, 1);
  free(t->traceback);
  t->traceback = NULL;
  return 0;
}

typedef struct sleeper {
  loop_timer timer;
  wait_slot slot;
  loop *lp;
} sleeper;

static void sleeper_fire(loop_timer *timer) {
  sleeper *s = (sleeper *)((char *)timer - offsetof(sleeper, timer));
  wait_slot_complete(&s->slot);
}

static void sleeper_cancel(wait_slot *slot) {
  sleeper *s = (sleeper *)((char *)slot - offsetof(sleeper, slot));
  loop_timer_stop(s->lp, &s->timer);
}

static int sleep_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  sleeper *s = (sleeper *)ctx;
  luagent_check_cancelled(L, &s->slot);
  return 0;
}

static int l_sleeper_gc(lua_State *L) {
  sleeper *s = lua_touserdata(L, 1);
  loop_timer_stop(s->lp, &s->timer);
  return 0;
}

/* loop.sleep(seconds) */
static int l_sleep(lua_State *L) {
  lua_Number seconds = luaL_checknumber(L, 1);
  host *h = host_of(L);
  sleeper *s = lua_newuserdatauv(L, sizeof *s, 0);
  luaL_setmetatable(L, "luagent.sleeper");
  s->lp = h->loop;
  loop_timer_init(&s->timer, sleeper_fire);
  wait_slot_init(&s->slot, sleeper_cancel);
  loop_timer_start(h->loop, &s->timer, seconds);
  return host_await(L, &s->slot, (lua_KContext)s, sleep_k);
}

static int yield_k(lua_State *L, int status, lua_KContext ctx) {
  (void)L, (void)status, (void)ctx;
  return 0;
}

/* loop.yield(): lets other ready tasks run first. */
static int l_yield(lua_State *L) {
  host *h = host_of(L);
  task *t = h->current;
  if (t && t->co == L && lua_isyieldable(L)) return lua_yieldk(L, 0, 0, yield_k);
  return 0;
}

static int l_now(lua_State *L) {
  lua_pushnumber(L, loop_now());
  return 1;
}

/* loop.current() -> task | nil */
static int l_current(lua_State *L) {
  host *h = host_of(L);
  if (!h->current || h->current->ref == LUA_NOREF) return 0;
  push_handle(L, h->current);
  return 1;
}

lua_State *tasks_running_thread(host *h) { return h->current ? h->current->co : NULL; }

int task_failure(lua_State *L, int idx) {
  task *t = check_task(L, idx);
  if (t->state != T_FAILED) return 0;
  int handle = lua_absindex(L, idx);
  t->observed = 1;
  forget_unobserved(L, handle);
  lua_getiuservalue(L, handle, UV_RESULT);
  lua_rawgeti(L, -1, 2);
  lua_remove(L, -2);
  if (t->traceback)
    lua_pushstring(L, t->traceback);
  else
    lua_pushnil(L);
  return 1;
}

/* A task stopped by cancellation (Ctrl-C, its main task failing) is not news. */
static int failed_by_cancel(lua_State *L, int handle) {
  lua_getiuservalue(L, handle, UV_RESULT);
  lua_rawgeti(L, -1, 2);
  int cancelled = 0;
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "kind");
    cancelled = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "cancelled") == 0;
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return cancelled;
}

int tasks_report_unobserved(host *h) {
  lua_State *L = h->L;
  int count = 0;
  lua_getfield(L, LUA_REGISTRYINDEX, UNOBSERVED_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    task *t = check_task(L, -1);
    if (!t->observed && !failed_by_cancel(L, lua_gettop(L))) {
      fprintf(stderr, "luagent: task %u failed and nobody waited for it:\n%s\n", t->id,
              t->traceback ? t->traceback : "(no traceback)");
      count++;
    }
  }
  lua_pop(L, 1);
  return count;
}

int luaopen_luagent_loop(lua_State *L) {
  static const luaL_Reg task_methods[] = {
      {"wait", l_task_wait},         {"cancel", l_task_cancel}, {"status", l_task_status},
      {"__tostring", l_task_tostring}, {"__gc", l_task_gc},     {NULL, NULL}};
  static const luaL_Reg sleeper_methods[] = {{"__gc", l_sleeper_gc}, {NULL, NULL}};
  static const luaL_Reg funcs[] = {{"spawn", l_spawn}, {"sleep", l_sleep},     {"yield", l_yield},
                                   {"now", l_now},     {"current", l_current}, {NULL, NULL}};
  luagent_new_class(L, TASK_CLASS, task_methods);
  luagent_new_class(L, "luagent.sleeper", sleeper_methods);
  lua_newtable(L);
  lua_setfield(L, LUA_REGISTRYINDEX, UNOBSERVED_KEY);
  luaL_newlib(L, funcs);
  return 1;
}

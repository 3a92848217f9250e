/* sched: tasks and waits (see sched.h for the contract). Spawning, the
 * task body and the task-local context are sched_task.c; the records both
 * use are sched_internal.h. The two files call each other on purpose: they
 * are one unit, split to keep each short (tools/symbol-cycles.lua reads this):
 *   one unit: sched.c sched_task.c
 *
 * A task is a coroutine whose body runs under a yieldable pcall, so an error
 * unwinds inside the task (its <close> handlers may still do cooperative
 * I/O) and is kept for task:wait(). A task handle's uservalues hold the
 * coroutine while it runs; once it finished, the table {ok, values..., n =
 * count} of what its body returned; after its first error, the traceback;
 * its context, if it has one. */
#include "sched.h"

#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_errors.h"
#include "sched_internal.h"

const char SCHED_WHY_INTERRUPT[] = "interrupted (Ctrl-C): the run is stopping";
const char SCHED_WHY_MAIN_FAILED[] = "the task was cancelled: the main task failed";
const char SCHED_WHY_CANCEL[] = "the task was cancelled by task:cancel()";
const char SCHED_WHY_CLOSE[] = "the task was cancelled: its handle was closed (task:close())";
const char SCHED_WHY_GAVE_UP[] = "the task was cancelled: tasks did not stop within the grace period";

/* registry keys: the addresses of these */
static const char SCHED_KEY = 0;
static const char UNOBSERVED_KEY = 0; /* set of handles of failed tasks nobody waited for */

typedef enum step_result { STEP_PROGRESS, STEP_IDLE, STEP_GAVE_UP } step_result;

/* ---- wait slots ---- */

void wait_slot_init(wait_slot *slot, void (*cancel)(wait_slot *slot)) {
  *slot = (wait_slot){.cancel = cancel};
}

void task_make_ready(task *t) {
  sched *s = t->s;
  t->state = TASK_READY;
  t->next_ready = NULL;
  if (s->ready_tail)
    s->ready_tail->next_ready = t;
  else
    s->ready_head = t;
  s->ready_tail = t;
}

void wait_slot_complete(wait_slot *slot) {
  if (slot->done) return;
  slot->done = 1;
  task *t = slot->task;
  if (t && t->state == TASK_WAITING && t->waiting == slot) {
    t->waiting = NULL;
    task_make_ready(t);
  }
}

static void cancel_slot(wait_slot *slot, const char *why) {
  if (slot->done) return;
  slot->cancelled = 1;
  slot->why = why;
  if (slot->cancel) slot->cancel(slot);
  wait_slot_complete(slot);
}

static int raise_cancelled(lua_State *L, const char *why) {
  luagent_push_error(L, "cancelled", "%s", why ? why : "the task was cancelled");
  return lua_error(L);
}

void sched_check_cancelled(lua_State *L, const wait_slot *slot) {
  if (slot->cancelled) raise_cancelled(L, slot->why);
}

/* ---- the scheduler's own state ---- */

sched *sched_new(lua_State *L, loop *lp, double grace_s) {
  sched *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->L = L;
  s->loop = lp;
  s->grace = grace_s;
  lua_pushlightuserdata(L, s);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &SCHED_KEY);
  lua_newtable(L);
  lua_rawsetp(L, LUA_REGISTRYINDEX, &UNOBSERVED_KEY);
  return s;
}

void sched_free(sched *s) { free(s); }

sched *sched_of(lua_State *L) {
  luaL_checkstack(L, 1, "no room to find the scheduler");
  lua_rawgetp(L, LUA_REGISTRYINDEX, &SCHED_KEY);
  sched *s = lua_touserdata(L, -1);
  lua_pop(L, 1);
  return s;
}

double sched_grace(const sched *s) { return s->grace; }
loop *sched_loop(const sched *s) { return s->loop; }

void sched_link_live(sched *s, task *t) {
  t->prev_live = NULL;
  t->next_live = s->live;
  if (s->live) s->live->prev_live = t;
  s->live = t;
  s->nlive++;
}

static void unlink_live(sched *s, task *t) {
  if (t->prev_live)
    t->prev_live->next_live = t->next_live;
  else
    s->live = t->next_live;
  if (t->next_live) t->next_live->prev_live = t->prev_live;
  s->nlive--;
  if (t->background) s->nbackground--;
}

void task_set_background(task *t) {
  if (t->background || t->finished) return;
  t->background = 1;
  t->s->nbackground++;
}

static task *pop_ready(sched *s) {
  task *t = s->ready_head;
  if (!t) return NULL;
  s->ready_head = t->next_ready;
  if (!s->ready_head) s->ready_tail = NULL;
  return t;
}

/* Adds (value true) or removes (nil) the handle at `handle` from the set of
 * failures to report at the end. */
static void mark_unobserved(lua_State *L, int handle, int unobserved) {
  lua_rawgetp(L, LUA_REGISTRYINDEX, &UNOBSERVED_KEY);
  lua_pushvalue(L, handle);
  if (unobserved) lua_pushboolean(L, 1);
  else lua_pushnil(L);
  lua_rawset(L, -3);
  lua_pop(L, 1);
}

/* ---- running tasks ---- */

/* Is the value at idx a "cancelled" error? A task stopped that way (Ctrl-C,
 * its main task failing) is not news when nobody waits for it. */
static int is_cancelled_error(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  lua_getfield(L, idx, "kind");
  int cancelled = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), "cancelled") == 0;
  lua_pop(L, 1);
  return cancelled;
}

/* The coroutine returned normally: its stack holds ok, values... (from task_body). */
static void finish_task(sched *s, task *t, int nres) {
  lua_State *L = s->L;
  lua_State *co = t->co;
  int ok = nres > 0 && lua_toboolean(co, -nres);
  int news = !ok && !(nres > 1 && is_cancelled_error(co, -nres + 1));
  luaL_checkstack(L, nres + 3, "too many results from a task");
  task_push_handle(L, t);
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
  t->state = ok ? TASK_DONE : TASK_FAILED;
  t->finished = 1;
  unlink_live(s, t);
  if (news && !t->waiters) mark_unobserved(L, handle, 1);
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

/* Keeps the traceback of the task's first error (on its coroutine L, level
 * `level`) in its handle, for the report of a failure nobody waited for. */
void task_keep_traceback(lua_State *L, task *t, const char *msg, int level) {
  luaL_checkstack(L, 2, "no room for a traceback");
  task_push_handle(L, t);
  if (lua_getiuservalue(L, -1, UV_TRACEBACK) == LUA_TNIL) {
    luaL_traceback(L, L, msg ? msg : "(error object is not a string)", level);
    lua_setiuservalue(L, -3, UV_TRACEBACK);
  }
  lua_pop(L, 2);
}

/* An error escaped task_body itself (an error inside a __close handler while
 * unwinding): record it as the task's failure. */
static void finish_task_with_escaped_error(sched *s, task *t) {
  lua_State *co = t->co;
  task_keep_traceback(co, t, lua_tostring(co, -1), 0);
  lua_pushboolean(co, 0);
  lua_insert(co, -2);
  finish_task(s, t, 2);
}

static void resume_task(sched *s, task *t) {
  int nargs = t->nstart;
  t->nstart = 0;
  task *saved = s->current;
  s->current = t;
  t->state = TASK_RUNNING;
  int nres = 0;
  int status = lua_resume(t->co, s->L, nargs, &nres);
  s->current = saved;
  if (status == LUA_YIELD) {
    lua_pop(t->co, nres);
    if (t->state == TASK_RUNNING) task_make_ready(t); /* a plain yield: let others run */
  } else if (status == LUA_OK) {
    finish_task(s, t, nres);
  } else {
    finish_task_with_escaped_error(s, t);
  }
}

/* Fails every task that waits for another task while nothing can ever wake
 * them (no ready task, no transfer, no timer): a deadlock. */
static void break_deadlock(sched *s) {
  for (task *t = s->live; t; t = t->next_live) {
    if (t->state == TASK_WAITING && t->joining) {
      t->cancel_pending = 0;
      t->deadlocked = 1;
      cancel_slot(&t->join, "deadlock");
    }
  }
}

/* One step: run a ready task, else wait for the loop. STEP_IDLE when
 * nothing can make progress (no ready task and the loop is idle). */
static step_result step(sched *s) {
  if (s->interrupted && !s->cancelling) sched_cancel_all(s, SCHED_WHY_INTERRUPT);
  if (s->cancelling && !s->gave_up && loop_now() > s->cancel_deadline) s->gave_up = 1;
  if (s->gave_up) return STEP_GAVE_UP;
  task *t = pop_ready(s);
  if (t) {
    resume_task(s, t);
    return STEP_PROGRESS;
  }
  if (loop_pending(s->loop) == 0) return STEP_IDLE;
  s->in_loop = 1;
  loop_run_once(s->loop, s->cancelling ? 0.2 : -1);
  s->in_loop = 0;
  return STEP_PROGRESS;
}

sched_status sched_run(sched *s, task *main) {
  while (s->nlive > s->nbackground) {
    if (main && main->state == TASK_FAILED && !s->cancelling) sched_cancel_all(s, SCHED_WHY_MAIN_FAILED);
    step_result r = step(s);
    if (r == STEP_GAVE_UP) break;
    if (r == STEP_IDLE) break_deadlock(s);
  }
  return s->gave_up ? SCHED_GAVE_UP : SCHED_DONE;
}

static const char STUCK[] = "nothing can make progress";

/* A wait outside a task: drives the scheduler in place until *done is true.
 * Returns NULL then, or why it stopped early: an interrupt, the grace
 * period over, or STUCK. */
static const char *drive_until(sched *s, const int *done) {
  while (!*done) {
    if (s->interrupted) return SCHED_WHY_INTERRUPT;
    step_result r = step(s);
    if (r == STEP_GAVE_UP) return SCHED_WHY_GAVE_UP;
    if (r == STEP_IDLE) return STUCK;
  }
  return NULL;
}

static void block_until_done(lua_State *L, sched *s, wait_slot *slot) {
  const char *why = drive_until(s, &slot->done);
  if (why == STUCK) {
    luaL_error(L, "deadlock: waiting for something that can never finish "
                  "(a task waiting for itself, or a wait outside any running task)");
  }
  if (why) cancel_slot(slot, why);
}

/* Is L the coroutine of the running task t, able to yield to the scheduler? */
static int can_yield(const task *t, lua_State *L) { return t && t->co == L && lua_isyieldable(L); }

int sched_await(lua_State *L, wait_slot *slot, lua_KContext ctx, lua_KFunction k) {
  sched *s = sched_of(L);
  task *t = s->current;
  if (!slot->done) {
    if (can_yield(t, L)) {
      if (t->cancel_pending) {
        t->cancel_pending = 0;
        cancel_slot(slot, t->cancel_why);
        return k(L, LUA_OK, ctx);
      }
      slot->task = t;
      t->waiting = slot;
      t->state = TASK_WAITING;
      return lua_yieldk(L, 0, ctx, k);
    }
    block_until_done(L, s, slot);
  }
  return k(L, LUA_OK, ctx);
}

void task_cancel(task *t, const char *why) {
  if (!t->finished && !t->stop_why) t->stop_why = why;
  if (t->state == TASK_WAITING && t->waiting) {
    cancel_slot(t->waiting, why);
  } else if ((t->state == TASK_READY || t->state == TASK_RUNNING) && !t->cancel_pending) {
    t->cancel_pending = 1;
    t->cancel_why = why;
  }
}

const char *sched_stopping(lua_State *L) {
  sched *s = sched_of(L);
  if (s->interrupted) return SCHED_WHY_INTERRUPT;
  return s->current ? s->current->stop_why : NULL;
}

void sched_cancel_all(sched *s, const char *why) {
  if (!s->cancelling) {
    s->cancelling = 1;
    s->cancel_deadline = loop_now() + s->grace;
  }
  for (task *t = s->live; t; t = t->next_live) task_cancel(t, why);
}

/* ---- interrupts ---- */

lua_State *sched_interrupt(sched *s, int sig) {
  s->interrupted = sig;
  loop_wakeup(s->loop);
  task *t = s->in_loop ? NULL : s->current;
  return t ? t->co : NULL;
}

int sched_interrupted(const sched *s) { return s->interrupted; }

void sched_reset(sched *s) {
  s->interrupted = 0;
  s->cancelling = 0;
  s->gave_up = 0;
}

/* Pushes the result table of the finished task at `handle` and returns its n. */
static int push_result_table(lua_State *L, int handle) {
  lua_getiuservalue(L, handle, UV_RESULT);
  lua_getfield(L, -1, "n");
  int n = (int)lua_tointeger(L, -1);
  lua_pop(L, 1);
  return n;
}

int task_failure(lua_State *L, int idx) {
  task *t = sched_check_task(L, idx);
  if (t->state != TASK_FAILED) return 0;
  int handle = lua_absindex(L, idx);
  t->observed = 1;
  mark_unobserved(L, handle, 0);
  push_result_table(L, handle);
  lua_rawgeti(L, -1, 2);
  lua_remove(L, -2);
  lua_getiuservalue(L, handle, UV_TRACEBACK);
  return 1;
}

int task_results(lua_State *L, int idx) {
  task *t = sched_check_task(L, idx);
  if (t->state != TASK_DONE) return 0;
  int n = push_result_table(L, lua_absindex(L, idx));
  int result = lua_gettop(L);
  luaL_checkstack(L, n, "too many results");
  for (int i = 2; i <= n; i++) lua_rawgeti(L, result, i);
  lua_remove(L, result);
  return n - 1;
}

/* What task:wait() returns for a finished task: its results or nil, error. */
static int push_outcome(lua_State *L, task *t, int handle) {
  t->observed = 1;
  if (t->state == TASK_DONE) return task_results(L, handle);
  task_failure(L, handle);
  lua_pop(L, 1); /* the traceback */
  lua_pushnil(L);
  lua_insert(L, -2);
  return 2;
}

static void stop_joining(task *self, task *t) {
  for (task **p = &t->waiters; *p; p = &(*p)->next_waiter) {
    if (*p == self) {
      *p = self->next_waiter;
      break;
    }
  }
  self->joining = NULL;
}

static int task_wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  task *t = (task *)ctx;
  task *self = sched_of(L)->current;
  if (self->join.cancelled && self->joining == t) stop_joining(self, t); /* t keeps running */
  if (!t->finished) {
    if (self->deadlocked) {
      self->deadlocked = 0;
      return luagent_fail(L, "deadlock", "task %u can never finish: every task is waiting", t->id);
    }
    sched_check_cancelled(L, &self->join);
  }
  return push_outcome(L, t, 1);
}

/* Outside a task: drives the scheduler until t finishes. */
static int wait_in_place(lua_State *L, sched *s, task *t) {
  const char *why = drive_until(s, &t->finished);
  if (why == STUCK) return luagent_fail(L, "deadlock", "task %u can never finish", t->id);
  if (why) return raise_cancelled(L, why);
  return push_outcome(L, t, 1);
}

int task_wait(lua_State *L) {
  task *t = sched_check_task(L, 1);
  lua_settop(L, 1);
  if (t->finished) return push_outcome(L, t, 1);
  sched *s = sched_of(L);
  task *self = s->current;
  if (self == t) return luaL_error(L, "a task cannot wait for itself");
  if (!can_yield(self, L)) return wait_in_place(L, s, t);
  wait_slot_init(&self->join, NULL);
  self->joining = t;
  self->next_waiter = t->waiters;
  t->waiters = self;
  return sched_await(L, &self->join, (lua_KContext)t, task_wait_k);
}

static int yield_k(lua_State *L, int status, lua_KContext ctx) {
  (void)L, (void)status, (void)ctx;
  return 0;
}

int task_yield(lua_State *L) {
  if (can_yield(sched_of(L)->current, L)) return lua_yieldk(L, 0, 0, yield_k);
  return 0;
}

/* ---- failures nobody took ---- */

/* The set holds failed tasks nobody waited for, except cancelled ones. */
int sched_report_unobserved(sched *s) {
  lua_State *L = s->L;
  int count = 0;
  lua_rawgetp(L, LUA_REGISTRYINDEX, &UNOBSERVED_KEY);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    lua_pop(L, 1);
    task *t = sched_check_task(L, -1);
    if (!t->observed) {
      lua_getiuservalue(L, -1, UV_TRACEBACK);
      const char *traceback = lua_tostring(L, -1);
      fprintf(stderr, "luagent: task %u failed and nobody waited for it:\n%s\n", t->id,
              traceback ? traceback : "(no traceback)");
      lua_pop(L, 1);
      count++;
    }
  }
  lua_pop(L, 1);
  return count;
}

/* sched_internal: what sched.c (the scheduler: waits, running, cancelling)
 * and sched_task.c (task handles: spawning, the task body, the task-local
 * context) share — the records of the scheduler and of a task, the slots of
 * a task handle's uservalues, and four helpers. Internal to src/sched*.c;
 * the public API is sched.h, which must be included first (this header
 * includes no header of ours, so the modules form no include circle). */
#ifndef LUAGENT_SCHED_INTERNAL_H
#define LUAGENT_SCHED_INTERNAL_H

#include <lua.h>
#include <signal.h>
#include <stddef.h>

struct sched {
  lua_State *L;
  loop *loop;
  task *current; /* task whose coroutine is running, or NULL */
  task *ready_head, *ready_tail;
  task *live; /* unfinished tasks, doubly linked */
  size_t nlive;
  size_t nbackground; /* of them, background tasks: they never keep a run going */
  unsigned next_task_id;
  volatile sig_atomic_t interrupted; /* signal number of a pending interrupt */
  volatile sig_atomic_t in_loop;     /* waiting in loop_run_once, not running Lua */
  int cancelling;                    /* an interrupt or a failed main task is unwinding tasks */
  int gave_up;                       /* they did not stop within the grace period */
  double grace;
  double cancel_deadline;
};

struct task {
  int closed; /* the handle was closed (task_close) */
  sched *s;
  lua_State *co;
  int ref;    /* registry ref keeping the handle alive until finished */
  int nstart; /* values on the fresh coroutine's stack for the first resume */
  task_status state;
  int finished; /* state is TASK_DONE or TASK_FAILED */
  int cancel_pending; /* cancel at the next wait, with cancel_why */
  const char *cancel_why;
  const char *stop_why; /* it was asked to stop (task_cancel), why: kept after its wait raised it */
  int observed;   /* someone took its result or error */
  int deadlocked; /* its wait was broken because nothing could wake it */
  unsigned id;
  wait_slot *waiting; /* what it waits for, when TASK_WAITING */
  task *next_ready;
  task *prev_live, *next_live;
  task *waiters; /* tasks blocked in wait() on this one */
  task *next_waiter;
  task *joining; /* the task this one waits for */
  wait_slot join;
  int has_context; /* UV_CONTEXT holds its context (task_set_context, or its spawner's) */
  int background;  /* task_set_background: sched_run does not wait for it */
};

enum { UV_THREAD = 1, UV_RESULT, UV_TRACEBACK, UV_CONTEXT, NUV }; /* uservalue slots of a task handle */

/* Puts t at the end of the ready queue. */
void task_make_ready(task *t);
/* Adds t to the unfinished tasks. */
void sched_link_live(sched *s, task *t);
/* Keeps the traceback of t's first error (on coroutine L, level `level`) in
 * its handle. */
void task_keep_traceback(lua_State *L, task *t, const char *msg, int level);

/* Pushes the handle of t, while the scheduler references it (unfinished). */
static inline void task_push_handle(lua_State *L, task *t) { lua_rawgeti(L, LUA_REGISTRYINDEX, t->ref); }

#endif

/* sched: the task scheduler — Lua coroutines run as tasks over the event loop.
 *
 * It owns every task and every wait: the task records, the ready queue, the
 * list of unfinished tasks, the wait slots a waiting primitive hands to
 * sched_await(), cancellation (with its reason, which the "cancelled" error's
 * message gives), deadlock detection and the failures nobody waited for.
 * It never exits the process: when tasks do not stop within the grace period
 * after a cancellation, sched_run() says so (SCHED_GAVE_UP) and the caller
 * decides. The host reaches it only through the functions below; lua_sched.c
 * gives task handles their Lua methods (luagent.sched).
 *
 * A task is known to Lua by its handle, a full userdata of class
 * SCHED_TASK_CLASS made by sched_spawn(). The scheduler keeps the handle
 * alive until the task finishes, then keeps its results (or error and
 * traceback) in it. A handle may be closed (task_close): that is the
 * binding's rule for user methods; the functions here keep working on a
 * closed handle, so the host's bookkeeping never depends on what a recipe
 * did with it.
 *
 * Names: sched_* and task_*, never one of libc's <sched.h> functions
 * (sched_yield, sched_getparam, ...): a clash replaces libc's for the whole
 * process (the leak checker calls sched_yield). */
#ifndef LUAGENT_SCHED_H
#define LUAGENT_SCHED_H

#include <lua.h>

#include "loop.h"

typedef struct sched sched;
typedef struct task task;

#define SCHED_TASK_CLASS "luagent.task"

/* ---- waits (what every waiting binding uses) ---- */

/* One pending operation a task can wait for. The operation calls
 * wait_slot_complete() when it finishes; `cancel` aborts it (may be NULL).
 * `why` is set when the wait was cancelled: the reason, as a message. */
typedef struct wait_slot {
  task *task;
  int done;
  int cancelled;
  const char *why;
  void (*cancel)(struct wait_slot *slot);
} wait_slot;

void wait_slot_init(wait_slot *slot, void (*cancel)(wait_slot *slot));
void wait_slot_complete(wait_slot *slot);

/* Waits until slot->done, then continues in k(L, status, ctx). Inside a task
 * this yields to the scheduler; elsewhere (the REPL, a plain coroutine, a
 * finalizer) it drives the scheduler in place. The continuation must begin
 * with sched_check_cancelled(L, slot). */
int sched_await(lua_State *L, wait_slot *slot, lua_KContext ctx, lua_KFunction k);
/* Raises {kind = "cancelled"} if the wait was cancelled; its message says
 * why (one of the SCHED_WHY_* reasons). */
void sched_check_cancelled(lua_State *L, const wait_slot *slot);

/* Why a task was cancelled: the message of its "cancelled" error. */
extern const char SCHED_WHY_INTERRUPT[];   /* "interrupted (Ctrl-C): the run is stopping" */
extern const char SCHED_WHY_MAIN_FAILED[]; /* "... the main task failed" */
extern const char SCHED_WHY_CANCEL[];      /* "... task:cancel()" */
extern const char SCHED_WHY_CLOSE[];       /* "... its handle was closed (task:close())" */
extern const char SCHED_WHY_GAVE_UP[];     /* "... did not stop within the grace period" */

/* ---- the scheduler ---- */

typedef enum sched_status {
  SCHED_DONE,   /* every task finished */
  SCHED_GAVE_UP /* tasks did not stop within the grace period of a cancel */
} sched_status;

/* Creates the scheduler of L's tasks over the event loop lp and registers
 * it in L's registry. `grace_s` is how long cancelled tasks get to stop
 * before sched_run() gives up. Returns NULL when out of memory. */
sched *sched_new(lua_State *L, loop *lp, double grace_s);
/* Frees the scheduler: after lua_close(L) (finalizers may still wait),
 * before loop_free(lp). */
void sched_free(sched *s);
/* The scheduler of L (any thread of the state). */
sched *sched_of(lua_State *L);
double sched_grace(const sched *s);
/* The event loop the scheduler waits on. */
loop *sched_loop(const sched *s);

/* Spawns the function on the stack (below its nargs arguments) as a task:
 * pops them, pushes the task's handle, returns the task. It runs at the
 * next sched_run() or wait. */
task *sched_spawn(lua_State *L, int nargs);
/* Drives every task until all have finished. If `main` (may be NULL) fails,
 * the others are cancelled with SCHED_WHY_MAIN_FAILED. Tasks waiting for
 * each other with nothing else to wake them get a "deadlock" error. */
sched_status sched_run(sched *s, task *main);
/* Asks every unfinished task to stop at its next wait, with `why` (one of
 * SCHED_WHY_*) as the message of its "cancelled" error. */
void sched_cancel_all(sched *s, const char *why);

/* Records an interrupt (signal `sig`): the next step cancels every task
 * with SCHED_WHY_INTERRUPT; wakes the loop. Returns the coroutine running
 * Lua right now (not waiting in the loop), which the caller stops with a
 * hook, or NULL. Async-signal-safe. */
lua_State *sched_interrupt(sched *s, int sig);
/* The signal of a pending interrupt, or 0. */
int sched_interrupted(const sched *s);
/* Forgets a finished run's interrupt and cancellation (the REPL, between
 * lines), so the next run starts afresh. */
void sched_reset(sched *s);

/* Prints every task that failed with nobody taking its error (a
 * cancellation is not news). Returns how many. */
int sched_report_unobserved(sched *s);

/* ---- one task, by its handle ---- */

typedef enum task_status { TASK_READY, TASK_RUNNING, TASK_WAITING, TASK_DONE, TASK_FAILED } task_status;

/* The task whose handle is at idx (an argument error if it is not one). */
task *sched_check_task(lua_State *L, int idx);
task_status task_status_of(const task *t);
/* "ready" | "running" | "waiting" | "done" | "failed" */
const char *task_status_name(task_status st);
unsigned task_id(const task *t);

/* After the task failed: pushes its error value and traceback (a string or
 * nil) and returns 1; otherwise pushes nothing and returns 0. Counts as
 * taking its error. */
int task_failure(lua_State *L, int idx);
/* After the task finished well: pushes its results and returns how many
 * (0 if it has not finished or failed). */
int task_results(lua_State *L, int idx);

/* task:wait() for the handle at index 1: its results, or nil and its
 * error. Inside a task it yields; elsewhere it drives the scheduler. */
int task_wait(lua_State *L);
/* Asks the task to stop at its next wait; no effect once it finished. */
void task_cancel(task *t, const char *why);
/* Why the running task (of L's state) was asked to stop — an interrupt
 * (Ctrl-C, SIGTERM), task:cancel(), its main task failing — or NULL. It
 * stays set after the cancelled wait raised it once, so code that caught
 * the cancellation can still see the run is stopping. */
const char *sched_stopping(lua_State *L);
/* Closes the handle: cancels an unfinished task (SCHED_WHY_CLOSE), marks
 * it closed. Idempotent. */
void task_close(task *t);
int task_is_closed(const task *t);
/* Marks an unfinished task as background: sched_run returns once only
 * background tasks are left (a server loop waiting for connections must
 * not keep a run from ending; what owns it ends it, e.g. at a box's close). */
void task_set_background(task *t);

/* loop.yield(): the running task lets other ready tasks run first (a no-op
 * outside a task). */
int task_yield(lua_State *L);
/* Pushes the handle of the task running now and returns 1, or returns 0. */
int sched_push_current(lua_State *L);

/* ---- the task-local context ----
 * Every task may carry one Lua value, its context (luagent.run keeps a
 * recipe run there). A task spawned by a task with a context gets the same
 * one; a task without one costs nothing. */

/* Pushes the context of the task running now (nil outside a task, or when
 * it has none). */
void sched_push_context(lua_State *L);
/* Pops a value and makes it the context of the task whose handle is at idx
 * (nil: none). Its children spawned from then on inherit it. */
void task_set_context(lua_State *L, int idx);

#endif

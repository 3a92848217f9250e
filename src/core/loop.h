/* loop: the one event loop under every waiting primitive (curl multi + timers).
 *
 * Pure C, no Lua: transfers (curl easy handles) and timers are registered with
 * a completion callback; loop_run_once() waits for I/O, a due timer or a
 * wakeup, then runs the callbacks. Callbacks only record results and mark
 * tasks runnable; the task scheduler (sched.c) resumes Lua code. curl is
 * initialised on first use, so a recipe that never does I/O never pays for it. */
#ifndef LUAGENT_LOOP_H
#define LUAGENT_LOOP_H

#include <curl/curl.h>
#include <stddef.h>

typedef struct loop loop;

/* A transfer owned by its creator; `done` runs once, after the handle has
 * been removed from the multi handle. */
typedef struct loop_xfer {
  CURL *easy;
  void (*done)(struct loop_xfer *x, CURLcode rc);
  int active;
} loop_xfer;

/* A timer owned by its creator; `fire` runs once when due. */
typedef struct loop_timer {
  double due;
  size_t heap_index; /* LOOP_TIMER_IDLE when not armed */
  void (*fire)(struct loop_timer *t);
} loop_timer;

#define LOOP_TIMER_IDLE ((size_t)-1)

/* A new loop. It also raises the process's soft limit of open files to its
 * hard limit (at most 65536): every sandbox session holds a descriptor. */
loop *loop_new(void);
void loop_free(loop *lp);

/* Starts a transfer. Returns 0, or -1 if curl refused it. */
int loop_add(loop *lp, loop_xfer *x);
/* Aborts a transfer without calling `done`. Safe on an inactive transfer. */
void loop_remove(loop *lp, loop_xfer *x);
/* Resumes a transfer paused by its write or read callback. */
void loop_unpause(loop *lp, loop_xfer *x);

/* A file descriptor watched for readiness (POLLIN/POLLOUT); `ready` runs
 * after each wait in which it was ready, with the poll revents. Any number
 * may be watched (a sandbox session holds one for its supervisor channel).
 * `index` and `polled` belong to the loop. */
typedef struct loop_watch {
  int fd;
  short events;
  void (*ready)(struct loop_watch *w, short revents);
  int active;
  size_t index;  /* its place among the loop's watches while active */
  size_t polled; /* its slot in the wait being dispatched, or LOOP_NOT_POLLED */
} loop_watch;

#define LOOP_NOT_POLLED ((size_t)-1)

/* Returns 0, or -1 when out of memory. A watch stopped (even by another
 * watch's callback, in the same dispatch) never has `ready` called again. */
int loop_watch_start(loop *lp, loop_watch *w);
void loop_watch_stop(loop *lp, loop_watch *w);

void loop_timer_init(loop_timer *t, void (*fire)(loop_timer *t));
void loop_timer_start(loop *lp, loop_timer *t, double delay_s);
void loop_timer_stop(loop *lp, loop_timer *t);

/* Waits at most max_wait_s seconds (negative: until something happens) and
 * dispatches completions. Returns 1 when woken by loop_wakeup(), else 0. */
int loop_run_once(loop *lp, double max_wait_s);
/* Wakes a loop_run_once() in progress. Async-signal-safe. */
void loop_wakeup(loop *lp);
/* Number of active transfers, armed timers and watched descriptors. */
size_t loop_pending(const loop *lp);
/* Monotonic clock in seconds. */
double loop_now(void);

#endif

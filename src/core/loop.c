/* loop: curl multi + a timer heap + a self-pipe for wakeups (see loop.h). */
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct loop {
  CURLM *multi; /* created on first transfer */
  size_t active_xfers;
  loop_timer **heap;
  size_t nheap, capheap;
  loop_watch **watches; /* the active ones */
  size_t nwatches, capwatches;
  /* one wait's descriptors (the wakeup pipe first, then each watch), sized
   * with `watches` so that a wait never allocates */
  struct pollfd *fds;
  struct curl_waitfd *waitfds;
  loop_watch **polled; /* polled[i] is fds[i + 1]'s watch; NULL once it stopped */
  size_t npolled;
  int wake_fd[2];
};

double loop_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Each sandbox session holds a descriptor (its supervisor channel) beside
 * curl's connections, so the soft RLIMIT_NOFILE (1024 on many systems, which
 * would stop a process near 1000 sessions) is raised to the hard limit, at
 * most LOOP_NOFILE (a huge limit slows children that close every possible
 * descriptor). The loop waits with poll(), which has no FD_SETSIZE bound. */
#define LOOP_NOFILE 65536

static void raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
  rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > LOOP_NOFILE ? LOOP_NOFILE : rl.rlim_max;
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
    rl.rlim_cur = want;
    setrlimit(RLIMIT_NOFILE, &rl); /* a refusal leaves the limit as it was */
  }
}

loop *loop_new(void) {
  raise_nofile();
  loop *lp = calloc(1, sizeof *lp);
  if (!lp) return NULL;
  if (pipe(lp->wake_fd) != 0) {
    free(lp);
    return NULL;
  }
  for (int i = 0; i < 2; i++) {
    fcntl(lp->wake_fd[i], F_SETFL, fcntl(lp->wake_fd[i], F_GETFL) | O_NONBLOCK);
    fcntl(lp->wake_fd[i], F_SETFD, FD_CLOEXEC);
  }
  return lp;
}

void loop_free(loop *lp) {
  if (!lp) return;
  if (lp->multi) curl_multi_cleanup(lp->multi);
  close(lp->wake_fd[0]);
  close(lp->wake_fd[1]);
  free(lp->heap);
  free(lp->watches);
  free(lp->fds);
  free(lp->waitfds);
  free(lp->polled);
  free(lp);
}

static CURLM *multi_of(loop *lp) {
  if (!lp->multi) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    lp->multi = curl_multi_init();
    if (lp->multi) curl_multi_setopt(lp->multi, CURLMOPT_MAXCONNECTS, 32L);
  }
  return lp->multi;
}

int loop_add(loop *lp, loop_xfer *x) {
  CURLM *multi = multi_of(lp);
  if (!multi) return -1;
  curl_easy_setopt(x->easy, CURLOPT_PRIVATE, (void *)x);
  if (curl_multi_add_handle(multi, x->easy) != CURLM_OK) return -1;
  x->active = 1;
  lp->active_xfers++;
  return 0;
}

void loop_remove(loop *lp, loop_xfer *x) {
  if (!x->active) return;
  curl_multi_remove_handle(lp->multi, x->easy);
  x->active = 0;
  lp->active_xfers--;
}

void loop_unpause(loop *lp, loop_xfer *x) {
  (void)lp;
  if (x->active) curl_easy_pause(x->easy, CURLPAUSE_CONT);
}

/* ---- watched descriptors ---- */

/* Room for `want` watches in every array a wait uses. */
static int reserve_watches(loop *lp, size_t want) {
  if (want <= lp->capwatches) return 0;
  size_t cap = lp->capwatches ? lp->capwatches * 2 : 16;
  while (cap < want) cap *= 2;
  loop_watch **watches = realloc(lp->watches, cap * sizeof *watches);
  if (watches) lp->watches = watches;
  loop_watch **polled = realloc(lp->polled, cap * sizeof *polled);
  if (polled) lp->polled = polled;
  struct pollfd *fds = realloc(lp->fds, (cap + 1) * sizeof *fds);
  if (fds) lp->fds = fds;
  struct curl_waitfd *waitfds = realloc(lp->waitfds, (cap + 1) * sizeof *waitfds);
  if (waitfds) lp->waitfds = waitfds;
  if (!watches || !polled || !fds || !waitfds) return -1; /* what did grow is kept; capacity is not */
  lp->capwatches = cap;
  return 0;
}

int loop_watch_start(loop *lp, loop_watch *w) {
  if (w->active) return 0;
  if (reserve_watches(lp, lp->nwatches + 1) != 0) return -1;
  w->index = lp->nwatches;
  w->polled = LOOP_NOT_POLLED;
  lp->watches[lp->nwatches++] = w;
  w->active = 1;
  return 0;
}

void loop_watch_stop(loop *lp, loop_watch *w) {
  if (!w->active) return;
  w->active = 0;
  if (w->polled != LOOP_NOT_POLLED) {
    lp->polled[w->polled] = NULL; /* a dispatch in progress skips it */
    w->polled = LOOP_NOT_POLLED;
  }
  loop_watch *last = lp->watches[--lp->nwatches];
  lp->watches[w->index] = last;
  last->index = w->index;
}

/* ---- timer heap (min-heap on `due`) ---- */

static void heap_swap(loop *lp, size_t i, size_t j) {
  loop_timer *t = lp->heap[i];
  lp->heap[i] = lp->heap[j];
  lp->heap[j] = t;
  lp->heap[i]->heap_index = i;
  lp->heap[j]->heap_index = j;
}

static void heap_up(loop *lp, size_t i) {
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (lp->heap[parent]->due <= lp->heap[i]->due) break;
    heap_swap(lp, i, parent);
    i = parent;
  }
}

static void heap_down(loop *lp, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < lp->nheap && lp->heap[l]->due < lp->heap[m]->due) m = l;
    if (r < lp->nheap && lp->heap[r]->due < lp->heap[m]->due) m = r;
    if (m == i) break;
    heap_swap(lp, i, m);
    i = m;
  }
}

void loop_timer_init(loop_timer *t, void (*fire)(loop_timer *t)) {
  t->due = 0;
  t->heap_index = LOOP_TIMER_IDLE;
  t->fire = fire;
}

void loop_timer_start(loop *lp, loop_timer *t, double delay_s) {
  loop_timer_stop(lp, t);
  if (lp->nheap == lp->capheap) {
    size_t cap = lp->capheap ? lp->capheap * 2 : 16;
    loop_timer **heap = realloc(lp->heap, cap * sizeof *heap);
    if (!heap) abort(); /* a timer cannot fail silently */
    lp->heap = heap;
    lp->capheap = cap;
  }
  t->due = loop_now() + (delay_s > 0 ? delay_s : 0);
  t->heap_index = lp->nheap;
  lp->heap[lp->nheap++] = t;
  heap_up(lp, t->heap_index);
}

void loop_timer_stop(loop *lp, loop_timer *t) {
  size_t i = t->heap_index;
  if (i == LOOP_TIMER_IDLE) return;
  t->heap_index = LOOP_TIMER_IDLE;
  lp->nheap--;
  if (i == lp->nheap) return;
  lp->heap[i] = lp->heap[lp->nheap];
  lp->heap[i]->heap_index = i;
  heap_up(lp, i);
  heap_down(lp, lp->heap[i]->heap_index);
}

static void fire_due_timers(loop *lp) {
  double now = loop_now();
  while (lp->nheap > 0 && lp->heap[0]->due <= now) {
    loop_timer *t = lp->heap[0];
    loop_timer_stop(lp, t);
    t->fire(t);
  }
}

/* ---- waiting ---- */

static int wait_ms(loop *lp, double max_wait_s) {
  double wait = max_wait_s;
  if (lp->nheap > 0) {
    double until_timer = lp->heap[0]->due - loop_now();
    if (until_timer < 0) until_timer = 0;
    if (wait < 0 || until_timer < wait) wait = until_timer;
  }
  if (wait < 0) return 60 * 1000; /* nothing scheduled: still wake now and then */
  return (int)ceil(wait * 1000.0);
}

static int drain_wakeups(loop *lp) {
  char scratch[64];
  int woken = 0;
  while (read(lp->wake_fd[0], scratch, sizeof scratch) > 0) woken = 1;
  return woken;
}

static void dispatch_finished_transfers(loop *lp) {
  int queued;
  CURLMsg *msg;
  while ((msg = curl_multi_info_read(lp->multi, &queued)) != NULL) {
    if (msg->msg != CURLMSG_DONE) continue;
    loop_xfer *x = NULL;
    CURLcode rc = msg->data.result;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
    loop_remove(lp, x);
    x->done(x, rc);
  }
}

/* Runs the `ready` callbacks of the watches poll marked. A callback may stop
 * watches (even others, which may then be freed): loop_watch_stop empties
 * their slot, so they are skipped. */
static void dispatch_watches(loop *lp) {
  for (size_t i = 0; i < lp->npolled; i++) {
    loop_watch *w = lp->polled[i];
    short revents = lp->fds[i + 1].revents;
    if (w && revents) w->ready(w, revents);
  }
  for (size_t i = 0; i < lp->npolled; i++)
    if (lp->polled[i]) lp->polled[i]->polled = LOOP_NOT_POLLED;
  lp->npolled = 0;
}

static short poll_events(short curl_events) {
  return (short)((curl_events & CURL_WAIT_POLLIN ? POLLIN : 0) | (curl_events & CURL_WAIT_POLLOUT ? POLLOUT : 0) |
                 (curl_events & CURL_WAIT_POLLPRI ? POLLPRI : 0));
}

int loop_run_once(loop *lp, double max_wait_s) {
  int timeout = wait_ms(lp, max_wait_s);
  if (reserve_watches(lp, 1) != 0) abort(); /* the wakeup pipe's slot; allocated once */
  struct pollfd *fds = lp->fds;
  size_t n = 0;
  fds[n++] = (struct pollfd){lp->wake_fd[0], POLLIN, 0};
  for (size_t i = 0; i < lp->nwatches; i++) {
    loop_watch *w = lp->watches[i];
    fds[n++] = (struct pollfd){w->fd, w->events, 0};
    lp->polled[i] = w;
    w->polled = i;
  }
  lp->npolled = lp->nwatches;
  if (lp->multi && lp->active_xfers > 0) {
    struct curl_waitfd *extra = lp->waitfds;
    for (size_t i = 0; i < n; i++)
      extra[i] = (struct curl_waitfd){fds[i].fd, (short)((fds[i].events & POLLIN ? CURL_WAIT_POLLIN : 0) |
                                                         (fds[i].events & POLLOUT ? CURL_WAIT_POLLOUT : 0)), 0};
    int running;
    curl_multi_poll(lp->multi, extra, (unsigned)n, timeout, NULL);
    for (size_t i = 0; i < n; i++) fds[i].revents = poll_events(extra[i].revents);
    curl_multi_perform(lp->multi, &running);
    dispatch_finished_transfers(lp);
  } else {
    while (poll(fds, (nfds_t)n, timeout) < 0 && errno == EINTR) {
      /* a signal: its handler also wrote to the pipe, poll again to see it */
    }
  }
  int woken = drain_wakeups(lp);
  dispatch_watches(lp);
  fire_due_timers(lp);
  return woken;
}

void loop_wakeup(loop *lp) {
  int saved = errno;
  ssize_t n = write(lp->wake_fd[1], "w", 1);
  (void)n; /* a full pipe already guarantees a wakeup */
  errno = saved;
}

size_t loop_pending(const loop *lp) { return lp->active_xfers + lp->nheap + lp->nwatches; }

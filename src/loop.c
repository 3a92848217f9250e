/* loop: curl multi + a timer heap + a self-pipe for wakeups (see loop.h). */
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct loop {
  CURLM *multi; /* created on first transfer */
  size_t active_xfers;
  loop_timer **heap;
  size_t nheap, capheap;
  loop_watch *watches[LOOP_MAX_WATCHES];
  size_t nwatches;
  int wake_fd[2];
};

double loop_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

loop *loop_new(void) {
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

int loop_watch_start(loop *lp, loop_watch *w) {
  if (w->active) return 0;
  if (lp->nwatches == LOOP_MAX_WATCHES) return -1;
  lp->watches[lp->nwatches++] = w;
  w->active = 1;
  return 0;
}

void loop_watch_stop(loop *lp, loop_watch *w) {
  if (!w->active) return;
  w->active = 0;
  for (size_t i = 0; i < lp->nwatches; i++) {
    if (lp->watches[i] == w) {
      lp->watches[i] = lp->watches[--lp->nwatches];
      return;
    }
  }
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

/* Runs the `ready` callbacks of the watches poll marked; a callback may stop
 * watches (even others), so each is looked up again before it runs. */
static void dispatch_watches(loop *lp, struct pollfd *fds, size_t n) {
  for (size_t i = 1; i < n; i++) {
    if (!fds[i].revents) continue;
    for (size_t j = 0; j < lp->nwatches; j++) {
      loop_watch *w = lp->watches[j];
      if (w->fd == fds[i].fd && w->active) {
        w->ready(w, fds[i].revents);
        break;
      }
    }
  }
}

int loop_run_once(loop *lp, double max_wait_s) {
  int timeout = wait_ms(lp, max_wait_s);
  struct pollfd fds[LOOP_MAX_WATCHES + 1];
  size_t n = 0;
  fds[n++] = (struct pollfd){lp->wake_fd[0], POLLIN, 0};
  for (size_t i = 0; i < lp->nwatches; i++) fds[n++] = (struct pollfd){lp->watches[i]->fd, lp->watches[i]->events, 0};
  if (lp->multi && lp->active_xfers > 0) {
    struct curl_waitfd extra[LOOP_MAX_WATCHES + 1];
    for (size_t i = 0; i < n; i++) extra[i] = (struct curl_waitfd){fds[i].fd, (short)((fds[i].events & POLLIN ? CURL_WAIT_POLLIN : 0) | (fds[i].events & POLLOUT ? CURL_WAIT_POLLOUT : 0)), 0};
    int running;
    curl_multi_poll(lp->multi, extra, (unsigned)n, timeout, NULL);
    for (size_t i = 0; i < n; i++)
      fds[i].revents = (short)((extra[i].revents & CURL_WAIT_POLLIN ? POLLIN : 0) | (extra[i].revents & CURL_WAIT_POLLOUT ? POLLOUT : 0) | (extra[i].revents & CURL_WAIT_POLLPRI ? POLLPRI : 0));
    curl_multi_perform(lp->multi, &running);
    dispatch_finished_transfers(lp);
  } else {
    while (poll(fds, (nfds_t)n, timeout) < 0 && errno == EINTR) {
      /* a signal: its handler also wrote to the pipe, poll again to see it */
    }
  }
  int woken = drain_wakeups(lp);
  dispatch_watches(lp, fds, n);
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

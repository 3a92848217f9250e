/* loop watches: any number of descriptors can be watched at once (a sandbox
 * session holds one for its supervisor channel: 300 sessions, 300 watches),
 * each ready one is dispatched once per wait, and a watch stopped by another
 * watch's callback in the same dispatch is never called (it may be freed). */
#include "../../src/core/loop.h"

#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

#define MANY 600

typedef struct pipe_watch {
  loop_watch w;
  int fds[2];
  int calls;
  struct pipe_watch *victim; /* stopped and freed by this one's callback */
} pipe_watch;

static void on_ready(loop_watch *w, short revents) {
  pipe_watch *p = (pipe_watch *)w;
  p->calls++;
  if (revents & POLLIN) {
    char c;
    if (read(p->fds[0], &c, 1) != 1) p->calls += 1000; /* dispatched without data */
  }
}

static loop *the_loop;
static const pipe_watch *freed; /* compared, never read */

static void on_ready_stopping(loop_watch *w, short revents) {
  pipe_watch *p = (pipe_watch *)w;
  on_ready(w, revents);
  if (p->victim) {
    freed = p->victim;
    loop_watch_stop(the_loop, &p->victim->w);
    close(p->victim->fds[0]);
    close(p->victim->fds[1]);
    free(p->victim);
    p->victim = NULL;
  }
}

static pipe_watch *new_watch(loop *lp, void (*ready)(loop_watch *, short)) {
  pipe_watch *p = calloc(1, sizeof *p);
  CHECK(p != NULL && pipe(p->fds) == 0);
  p->w = (loop_watch){.fd = p->fds[0], .events = POLLIN, .ready = ready};
  CHECK(loop_watch_start(lp, &p->w) == 0);
  return p;
}

static void free_watch(loop *lp, pipe_watch *p) {
  loop_watch_stop(lp, &p->w);
  close(p->fds[0]);
  close(p->fds[1]);
  free(p);
}

static void many_watches_each_dispatched(void) {
  loop *lp = loop_new();
  pipe_watch *ws[MANY];
  for (int i = 0; i < MANY; i++) ws[i] = new_watch(lp, on_ready);
  CHECK(loop_pending(lp) == MANY);
  for (int i = 0; i < MANY; i += 2) CHECK(write(ws[i]->fds[1], "x", 1) == 1);
  loop_run_once(lp, 1.0);
  int wrong = 0;
  for (int i = 0; i < MANY; i++) wrong += ws[i]->calls != (i % 2 == 0 ? 1 : 0);
  CHECK(wrong == 0);
  /* stopping from the middle keeps the others watched */
  for (int i = 0; i < MANY; i += 3) free_watch(lp, ws[i]), ws[i] = NULL;
  for (int i = 0; i < MANY; i++)
    if (ws[i]) CHECK(write(ws[i]->fds[1], "x", 1) == 1);
  loop_run_once(lp, 1.0);
  wrong = 0;
  for (int i = 0; i < MANY; i++)
    if (ws[i]) wrong += ws[i]->calls != (i % 2 == 0 ? 2 : 1);
  CHECK(wrong == 0);
  for (int i = 0; i < MANY; i++)
    if (ws[i]) free_watch(lp, ws[i]);
  CHECK(loop_pending(lp) == 0);
  loop_free(lp);
}

/* Both ready in one wait; whichever runs first stops and frees the other. */
static void a_watch_stopped_in_dispatch_is_not_called(void) {
  loop *lp = the_loop = loop_new();
  pipe_watch *a = new_watch(lp, on_ready_stopping);
  pipe_watch *b = new_watch(lp, on_ready_stopping);
  pipe_watch *keep = new_watch(lp, on_ready);
  a->victim = b;
  b->victim = a;
  CHECK(write(a->fds[1], "x", 1) == 1);
  CHECK(write(b->fds[1], "x", 1) == 1);
  CHECK(write(keep->fds[1], "x", 1) == 1);
  loop_run_once(lp, 1.0); /* under ASan, a call on the freed one is a use after free */
  CHECK(freed == a || freed == b);
  pipe_watch *survivor = freed == a ? b : a;
  CHECK(survivor->calls == 1);
  CHECK(keep->calls == 1);
  CHECK(loop_pending(lp) == 2);
  free_watch(lp, survivor);
  free_watch(lp, keep);
  loop_free(lp);
}

int main(void) {
  RUN(many_watches_each_dispatched);
  RUN(a_watch_stopped_in_dispatch_is_not_called);
  TEST_EXIT();
}

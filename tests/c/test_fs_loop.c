/* fs and loop cores: mkdir -p, atomic write, walk order, rm -rf that does
 * not follow links; timers fire in order and wakeups interrupt a wait. */
#include "../../src/core/fs.h"
#include "../../src/core/loop.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

typedef struct seen {
  buf names;
} seen;

static int record(const char *rel, const struct stat *st, void *ctx) {
  seen *s = ctx;
  buf_printf(&s->names, "%s:%s ", rel, fs_type_name(st->st_mode));
  return 0;
}

static void files_round_trip(void) {
  char root[PATH_MAX], path[PATH_MAX + 64];
  CHECK(fs_temp_dir("luagent-test", root, sizeof root) == 0);
  snprintf(path, sizeof path, "%s/a/b/c", root);
  CHECK(fs_mkdir_p(path, 0755) == 0);
  CHECK(fs_mkdir_p(path, 0755) == 0); /* existing is fine */
  snprintf(path, sizeof path, "%s/a/b/file.txt", root);
  CHECK(fs_write_atomic(path, "hello", 5, 0644) == 0);
  CHECK(fs_append(path, " world", 6) == 0);
  buf b = BUF_INIT;
  CHECK(fs_read_file(path, &b, NULL, 0) == 0);
  CHECK_STR(b.data, "hello world");
  buf_free(&b);
  /* a link to outside must not be followed by remove */
  char outside[PATH_MAX], keep[PATH_MAX + 16], link[PATH_MAX + 16];
  CHECK(fs_temp_dir("luagent-outside", outside, sizeof outside) == 0);
  snprintf(keep, sizeof keep, "%s/keep", outside);
  CHECK(fs_write_atomic(keep, "x", 1, 0644) == 0);
  snprintf(link, sizeof link, "%s/a/link", root);
  CHECK(symlink(outside, link) == 0);
  seen s = {BUF_INIT};
  CHECK(fs_walk(root, record, &s) == 0);
  CHECK_STR(s.names.data, "a:directory a/b:directory a/b/c:directory a/b/file.txt:file a/link:link ");
  buf_free(&s.names);
  CHECK(fs_remove_tree(root) == 0);
  CHECK(access(root, F_OK) != 0);
  CHECK(access(keep, F_OK) == 0);
  fs_remove_tree(outside);
}

static loop_timer *fired_order[3];
static int fired;

static void fire(loop_timer *t) { fired_order[fired++] = t; }

static void timers_fire_in_due_order(void) {
  loop *lp = loop_new();
  loop_timer a, b, c;
  loop_timer_init(&a, fire);
  loop_timer_init(&b, fire);
  loop_timer_init(&c, fire);
  fired = 0;
  loop_timer_start(lp, &a, 0.03);
  loop_timer_start(lp, &b, 0.01);
  loop_timer_start(lp, &c, 0.02);
  loop_timer_stop(lp, &c); /* a stopped timer never fires */
  double start = loop_now();
  while (loop_pending(lp) > 0) loop_run_once(lp, -1);
  double took = loop_now() - start;
  CHECK(fired == 2);
  CHECK(fired_order[0] == &b && fired_order[1] == &a);
  CHECK(took >= 0.025 && took < 0.5);
  loop_free(lp);
}

static void wakeup_interrupts_a_wait(void) {
  loop *lp = loop_new();
  loop_wakeup(lp);
  double start = loop_now();
  CHECK(loop_run_once(lp, 5.0) == 1);
  CHECK(loop_now() - start < 1.0);
  loop_free(lp);
}

int main(void) {
  RUN(files_round_trip);
  RUN(timers_fire_in_due_order);
  RUN(wakeup_interrupts_a_wait);
  TEST_EXIT();
}

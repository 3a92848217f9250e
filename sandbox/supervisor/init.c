/* init: PID 1 (see init.h). */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frames.h"
#include "proctree.h"

static int copy_file(int from, const char *to) {
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
  if (out < 0) return -1;
  char chunk[65536];
  ssize_t n;
  int rc = 0;
  while (rc == 0 && (n = read_some(from, chunk, sizeof chunk)) > 0) rc = write_all(out, chunk, (size_t)n);
  if (n < 0 || fchmod(out, 0755) != 0) rc = -1;
  if (close(out) != 0) rc = -1;
  return rc;
}

/* Removes path as the owner of its directory: root has no CAP_DAC_OVERRIDE
 * here, and the workspace belongs to the command uid. */
static void remove_as_dir_owner(const char *path) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) return;
  *(slash == dir ? slash + 1 : slash) = '\0';
  struct stat st;
  if (stat(dir, &st) != 0) return;
  setfsuid(st.st_uid);
  setfsgid(st.st_gid);
  if (unlink(path) != 0) fprintf(stderr, "luagent-supervisor: cannot remove %s: %s\n", path, strerror(errno));
  setfsuid(0);
  setfsgid(0);
}

/* Copies the running binary to SV_BINARY and execs it; returns only when
 * that cannot be done. */
static void stage(int move) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return;
  self[n] = '\0';
  if (strcmp(self, SV_BINARY) == 0) return;
  int from = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  const char *tmp = SV_BINARY ".new";
  if (from < 0 || copy_file(from, tmp) != 0 || rename(tmp, SV_BINARY) != 0) {
    fprintf(stderr, "luagent-supervisor: cannot stage into %s (%s): running from %s\n", SV_HOME, strerror(errno),
            self);
    if (from >= 0) close(from);
    return;
  }
  close(from);
  if (move) remove_as_dir_owner(self);
  char *argv[] = {"luagent-supervisor", "init", NULL};
  execv(SV_BINARY, argv);
  fprintf(stderr, "luagent-supervisor: cannot exec %s: %s\n", SV_BINARY, strerror(errno));
}

int init_main(int move) {
  stage(move);
  prctl(PR_SET_DUMPABLE, 0);
  sigset_t wanted;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, SIGTERM);
  sigaddset(&wanted, SIGINT);
  sigprocmask(SIG_BLOCK, &wanted, NULL);
  struct timespec second = {1, 0};
  long long next_sweep = now_ms() + 1000;
  for (;;) {
    int sig = sigtimedwait(&wanted, NULL, &second);
    if (sig == SIGTERM || sig == SIGINT) return 0;
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    if (now_ms() >= next_sweep) {
      proc_kill_orphans_of(1);
      next_sweep = now_ms() + 1000;
    }
  }
}

/* init: PID 1 (see init.h). */
#include "init.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "frames.h"
#include "proctree.h"

int init_main(void) {
  prctl(PR_SET_DUMPABLE, 0);
  /* an emptyDir (Kubernetes) comes world-writable: the skills folder is root's, read-only to commands */
  chmod("/skills", 0755);
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

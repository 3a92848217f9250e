/* reaper: the per-command subreaper (see reaper.h). Runs as root with the
 * supervisor's three capabilities; the command's main process drops to the
 * command uid before it runs anything of the command's. */
#include "reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frames.h"
#include "proctree.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* fds inside the reaper */
enum { FD_IN, FD_OUT, FD_ERR, FD_EXTRA, FD_STATUS, FD_CONTROL, FD_FIRST_FREE };

#define KILL_PHASE_MS 5000

typedef struct reaper {
  pid_t self, main;
  int subreaper;     /* PR_SET_CHILD_SUBREAPER took (not under gVisor: orphans go to PID 1) */
  int main_done, main_status;
  int killing;       /* our own SIGKILLs are flying: a SIGKILL death is not evidence */
  int sigkill_seen;  /* something of the command died of a SIGKILL we did not send */
  kill_set killed;
  int sigfd;
  int failed_step, failed_errno;
} reaper;

/* ---- setting up the fds ---- */

/* Closes every fd >= first. Without close_range (gVisor's runsc answers
 * ENOSYS) the open ones are read from /proc/self/fd: under gVisor each
 * syscall costs microseconds (ptrace), and closing 0..4095 one by one was
 * most of a command's cost there (~110 ms of ~115 for `true`). */
static void close_from(int first) {
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
  int open_fds[256];
  size_t n = 0;
  int complete = 0;
  DIR *dir = opendir("/proc/self/fd");
  if (dir) {
    complete = 1;
    for (struct dirent *d; (d = readdir(dir));) {
      if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
      int fd = atoi(d->d_name);
      if (fd < first || fd == dirfd(dir)) continue;
      if (n == sizeof open_fds / sizeof open_fds[0]) { complete = 0; break; }
      open_fds[n++] = fd;
    }
    closedir(dir);
  }
  for (size_t i = 0; i < n; i++) close(open_fds[i]);
  if (!complete)
    for (int fd = first; fd < 4096; fd++) close(fd);
}

/* fd moved to a number >= FD_FIRST_FREE (close-on-exec); -1 on failure. */
static int above_command_fds(int fd) {
  if (fd < 0 || fd >= FD_FIRST_FREE) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, FD_FIRST_FREE);
  close(fd);
  return high;
}

/* Puts the given fds at 0..5 whatever their numbers were, closes the rest. */
static void arrange_fds(const int *from) {
  int high[FD_FIRST_FREE];
  for (int i = 0; i < FD_FIRST_FREE; i++) high[i] = from[i] >= 0 ? fcntl(from[i], F_DUPFD_CLOEXEC, 64) : -1;
  for (int i = 0; i < FD_FIRST_FREE; i++) {
    if (high[i] >= 0) dup2(high[i], i);
    else close(i);
  }
  close_from(FD_FIRST_FREE);
}

/* ---- the command's main process ---- */

static void report_failure(int errfd, int step) {
  int record[2] = {step, errno};
  write_all(errfd, record, sizeof record);
  _exit(step == STEP_EXEC && errno == ENOENT ? 127 : 126);
}

static void reset_signals(void) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
}

/* Empties the bounding set, so that nothing the command runs can ever gain a
 * capability (no-new-privileges forbids it already). Needs CAP_SETPCAP; a
 * container without it keeps its bounding set (the command still has none). */
static void drop_bounding_set(void) {
  for (int cap = 0; cap < 64; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;
}

static void become_user(const command_spec *spec, int errfd) {
  gid_t groups[1] = {spec->gid};
  drop_bounding_set();
  if (setgroups(1, groups) != 0 || setgid(spec->gid) != 0 || setuid(spec->uid) != 0) report_failure(errfd, STEP_USER);
  if (spec->uid != 0 && (setuid(0) == 0 || geteuid() == 0)) {
    errno = EPERM;
    report_failure(errfd, STEP_USER);
  }
}

static void run_main(const command_spec *spec, int errfd) {
  close(FD_STATUS);
  close(FD_CONTROL);
  reset_signals();
  setsid();
  if (spec->tty) ioctl(STDIN_FILENO, TIOCSCTTY, 0); /* Ctrl-C, job control and /dev/tty work */
  int adj = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (adj >= 0) { /* under memory pressure the OOM killer picks commands, not us */
    write_all(adj, "1000", 4);
    close(adj);
  }
  become_user(spec, errfd);
  if (spec->cwd && chdir(spec->cwd) != 0) report_failure(errfd, STEP_CWD);
  if (spec->body) {
    close(errfd); /* no exec to wait for: the reaper goes on at once */
    _exit(spec->body(spec->body_ctx));
  }
  extern char **environ;
  environ = (char **)spec->env;
  execvp(spec->argv[0], spec->argv);
  report_failure(errfd, STEP_EXEC);
}

/* ---- reaping and killing ---- */

static void reap_all(reaper *r) {
  for (;;) {
    int st;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid <= 0) return;
    if (!r->killing && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) r->sigkill_seen = 1;
    if (pid == r->main) r->main_done = 1, r->main_status = st;
  }
}

static int has_children(void) {
  siginfo_t info;
  memset(&info, 0, sizeof info);
  return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

static void wait_sigchld(reaper *r, int ms) {
  struct pollfd p = {r->sigfd, POLLIN, 0};
  if (poll(&p, 1, ms) > 0) {
    struct signalfd_siginfo info;
    while (read(r->sigfd, &info, sizeof info) == (ssize_t)sizeof info) {}
  }
}

/* Kills everything below the reaper except `spare` (0: none), in rounds,
 * until nothing of it is left (or a process stuck in an uninterruptible wait outlasts
 * KILL_PHASE_MS). The caller has set r->killing. Without a subreaper, orphans
 * of the command are PID 1's children: found by the command's session. */
static void kill_below(reaper *r, pid_t spare) {
  long long deadline = now_ms() + KILL_PHASE_MS;
  for (;;) {
    reap_all(r);
    /* every process left below the reaper is below one of its children: none, nothing to scan */
    if (r->subreaper && !spare && !has_children()) return;
    long left = proc_kill_below(r->self, r->subreaper ? 0 : r->main, spare, &r->killed);
    reap_all(r);
    if (left <= 0 || now_ms() > deadline) return;
    wait_sigchld(r, 10);
    reap_all(r);
  }
}

static void kill_tree(reaper *r) {
  r->killing = 1;
  int main_alive = !r->main_done;
  /* no subreaper: what the main process started is found by its parent while that lives */
  if (main_alive && !r->subreaper) proc_kill_below(r->self, r->main, r->main, &r->killed);
  if (main_alive) kill(r->main, SIGKILL);
  kill_below(r, main_alive ? r->main : 0);
  long long deadline = now_ms() + KILL_PHASE_MS;
  for (reap_all(r); has_children() && now_ms() < deadline; reap_all(r)) wait_sigchld(r, 10);
}

static void say(const char *line) { write_all(FD_STATUS, line, strlen(line)); }

/* A control byte from serve. Returns 1 when the reaper is to finish. */
static int on_control(reaper *r) {
  unsigned char msg[2];
  ssize_t n = read_some(FD_CONTROL, msg, 1);
  if (n <= 0 || msg[0] == 'K') {
    kill_tree(r);
    return 1;
  }
  if (msg[0] == 'C') {
    size_t before = r->killed.n;
    r->killing = 1;
    kill_below(r, r->main_done ? 0 : r->main);
    r->killing = 0;
    char line[32];
    snprintf(line, sizeof line, "c %zu\n", r->killed.n - before);
    say(line);
  } else if (msg[0] == 'S' && read_some(FD_CONTROL, msg + 1, 1) == 1 && !r->main_done) {
    if (kill(-r->main, msg[1]) != 0) kill(r->main, msg[1]);
  }
  return 0;
}

static void serve_command(reaper *r, const command_spec *spec) {
  for (;;) {
    reap_all(r);
    if (r->main_done && !spec->keep_tree) {
      kill_tree(r);
      return;
    }
    if (r->main_done && !has_children()) {
      if (!r->subreaper) kill_tree(r); /* its orphans, with PID 1: they cannot be waited for */
      return;
    }
    struct pollfd p[2] = {{r->sigfd, POLLIN, 0}, {FD_CONTROL, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) continue;
    if (p[0].revents) wait_sigchld(r, 0);
    if (p[1].revents && on_control(r)) return;
  }
}

/* Waits for the main process to exec (the pipe closes) or to say why it could not. */
static void read_exec_result(reaper *r, int errfd) {
  int record[2];
  if (read_some(errfd, record, sizeof record) == (ssize_t)sizeof record)
    r->failed_step = record[0], r->failed_errno = record[1];
  close(errfd);
}

static void reaper_main(const command_spec *spec) {
  reaper r = {.self = getpid()};
  r.subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  prctl(PR_SET_DUMPABLE, 0);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  /* above the command's fds 0..3, which are closed once it is forked */
  r.sigfd = above_command_fds(signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC));
  int errpipe[2];
  if (r.sigfd < 0 || pipe2(errpipe, O_CLOEXEC) != 0) _exit(1);
  errpipe[0] = above_command_fds(errpipe[0]);
  errpipe[1] = above_command_fds(errpipe[1]);
  if (errpipe[0] < 0 || errpipe[1] < 0) _exit(1);
  r.main = fork();
  if (r.main == 0) {
    close(errpipe[0]);
    run_main(spec, errpipe[1]);
  }
  close(errpipe[1]);
  for (int fd = FD_IN; fd <= FD_EXTRA; fd++) close(fd);
  if (r.main < 0) {
    r.failed_step = STEP_EXEC, r.failed_errno = errno;
    r.main_done = 1, r.main_status = 126 << 8;
  } else {
    read_exec_result(&r, errpipe[0]);
    serve_command(&r, spec);
  }
  char line[128];
  snprintf(line, sizeof line, "d %d %zu %d %d %d\n", r.main_status, r.killed.n, r.sigkill_seen, r.failed_step,
           r.failed_errno);
  say(line);
  _exit(0);
}

int reaper_start(const command_spec *spec, int in_fd, int out_fd, int err_fd, int extra_fd,
                 reaper_handle *h) {
  int control[2], status[2];
  if (pipe2(control, O_CLOEXEC) != 0) return -1;
  if (pipe2(status, O_CLOEXEC) != 0) {
    close(control[0]), close(control[1]);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int from[FD_FIRST_FREE] = {in_fd, out_fd, err_fd, extra_fd, status[1], control[0]};
    arrange_fds(from);
    reaper_main(spec);
  }
  int saved = errno;
  close(control[0]);
  close(status[1]);
  if (pid < 0) {
    close(control[1]), close(status[0]);
    errno = saved;
    return -1;
  }
  *h = (reaper_handle){pid, control[1], status[0]};
  return 0;
}

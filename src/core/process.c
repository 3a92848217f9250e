/* process: fork/exec with pipes, process groups, reaping (see process.h). */
#include "process.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* ---- pure helpers ---- */

int process_find_program(const char *name, const char *path, char *out, size_t outlen) {
  if (!name || !*name) return ENOENT;
  if (strchr(name, '/')) {
    if (strlen(name) >= outlen) return ENAMETOOLONG;
    strcpy(out, name);
    return 0;
  }
  if (!path) path = DEFAULT_PATH;
  int found_unexecutable = 0;
  for (const char *dir = path;;) {
    const char *end = strchr(dir, ':');
    size_t len = end ? (size_t)(end - dir) : strlen(dir);
    /* an empty entry is the current folder, as execvp has it */
    int n = len ? snprintf(out, outlen, "%.*s/%s", (int)len, dir, name) : snprintf(out, outlen, "%s", name);
    if (n < 0 || (size_t)n >= outlen) return ENAMETOOLONG;
    struct stat st;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(out, X_OK) == 0) return 0;
      found_unexecutable = 1;
    }
    if (!end) break;
    dir = end + 1;
  }
  out[0] = '\0';
  return found_unexecutable ? EACCES : ENOENT;
}

const char *process_env_get(const char *const *envp, const char *name) {
  size_t n = strlen(name);
  for (; envp && *envp; envp++)
    if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=') return *envp + n + 1;
  return NULL;
}

static const struct {
  int number;
  const char *name;
} SIGNALS[] = {
    {SIGHUP, "HUP"},   {SIGINT, "INT"},   {SIGQUIT, "QUIT"}, {SIGILL, "ILL"},   {SIGTRAP, "TRAP"},
    {SIGABRT, "ABRT"}, {SIGBUS, "BUS"},   {SIGFPE, "FPE"},   {SIGKILL, "KILL"}, {SIGUSR1, "USR1"},
    {SIGSEGV, "SEGV"}, {SIGUSR2, "USR2"}, {SIGPIPE, "PIPE"}, {SIGALRM, "ALRM"}, {SIGTERM, "TERM"},
    {SIGCHLD, "CHLD"}, {SIGCONT, "CONT"}, {SIGSTOP, "STOP"}, {SIGTSTP, "TSTP"}, {SIGTTIN, "TTIN"},
    {SIGTTOU, "TTOU"}, {SIGURG, "URG"},   {SIGXCPU, "XCPU"}, {SIGXFSZ, "XFSZ"}, {SIGWINCH, "WINCH"},
    {SIGSYS, "SYS"},
};

int process_signal_number(const char *name) {
  if (!name || !*name) return 0;
  if (isdigit((unsigned char)*name)) {
    char *end;
    long n = strtol(name, &end, 10);
    return *end == '\0' && n > 0 && n < NSIG ? (int)n : 0;
  }
  if (strncasecmp(name, "SIG", 3) == 0) name += 3;
  for (size_t i = 0; i < sizeof SIGNALS / sizeof SIGNALS[0]; i++)
    if (strcasecmp(name, SIGNALS[i].name) == 0) return SIGNALS[i].number;
  return 0;
}

const char *process_signal_name(int sig) {
  for (size_t i = 0; i < sizeof SIGNALS / sizeof SIGNALS[0]; i++)
    if (SIGNALS[i].number == sig) return SIGNALS[i].name;
  return NULL;
}

void process_decode_status(process *p, int status) {
  p->reaped = 1;
  if (WIFSIGNALED(status)) {
    p->signal = WTERMSIG(status);
    p->exit_code = 128 + p->signal;
  } else {
    p->signal = 0;
    p->exit_code = WEXITSTATUS(status);
  }
}

/* ---- descriptors ---- */

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* Moves fd above 2, so the child's dup2 onto 0..2 never overwrites another
 * source; keeps it close-on-exec. Returns the descriptor, or -1. */
static int above_stdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

static int set_nonblocking(int fd) { return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

/* The descriptors a spawn makes: child[i] goes to the child's fd i (-1:
 * inherit), ours[i] stays with us (-1: none); err_pipe carries an exec
 * failure. */
typedef struct spawn_fds {
  int child[3];
  int ours[3];
  int err_pipe[2];
} spawn_fds;

static void spawn_fds_close(spawn_fds *f) {
  for (int i = 0; i < 3; i++) {
    close_fd(&f->child[i]);
    close_fd(&f->ours[i]);
  }
  close_fd(&f->err_pipe[0]);
  close_fd(&f->err_pipe[1]);
}

static int make_fds(spawn_fds *f, const process_options *o) {
  for (int i = 0; i < 3; i++) f->child[i] = f->ours[i] = -1;
  f->err_pipe[0] = f->err_pipe[1] = -1;
  for (int i = 0; i < 3; i++) {
    if (o->stdio[i] == PROCESS_NULL) {
      f->child[i] = above_stdio(open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC));
      if (f->child[i] < 0) return errno;
    } else if (o->stdio[i] == PROCESS_PIPE) {
      int p[2];
      if (pipe2(p, O_CLOEXEC) != 0) return errno;
      int reader = above_stdio(p[0]), writer = above_stdio(p[1]);
      f->child[i] = i == 0 ? reader : writer;
      f->ours[i] = i == 0 ? writer : reader;
      if (f->child[i] < 0 || f->ours[i] < 0 || set_nonblocking(f->ours[i]) != 0) return errno ? errno : EMFILE;
    }
  }
  if (pipe2(f->err_pipe, O_CLOEXEC) != 0) return errno;
  f->err_pipe[1] = above_stdio(f->err_pipe[1]);
  return f->err_pipe[1] < 0 ? errno : 0;
}

/* ---- the child, between fork and exec: async-signal-safe calls only ---- */

typedef struct exec_failure {
  int err;
  int stage; /* 0: exec, 1: cwd, 2: stdio */
} exec_failure;

/* Every descriptor above 2 closes at exec (the error pipe too: it is how the
 * parent learns that exec worked); the host's files and sockets stay ours. */
static void cloexec_from_3(void) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */) == 0) return;
#endif
  struct rlimit rl;
  long max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (long)rl.rlim_cur : 65536;
  if (max > 65536) max = 65536;
  for (int fd = 3; fd < max; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static void child_fail(int fd, int stage) {
  exec_failure f = {errno, stage};
  ssize_t n = write(fd, &f, sizeof f);
  (void)n;
  _exit(127);
}

/* Default signal dispositions (an ignored SIGPIPE would survive exec) and
 * an empty mask, its group, its streams, its folder; then exec. */
static void run_child(const spawn_fds *f, const process_options *o, const char *program, char *const *envp) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL); /* KILL/STOP refuse: fine */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  if (o->new_group) setpgid(0, 0);
  for (int i = 0; i < 3; i++)
    if (f->child[i] >= 0 && dup2(f->child[i], i) < 0) child_fail(f->err_pipe[1], 2);
  if (o->cwd && chdir(o->cwd) != 0) child_fail(f->err_pipe[1], 1);
  cloexec_from_3();
  execve(program, (char *const *)o->argv, envp);
  child_fail(f->err_pipe[1], 0);
}

/* ---- spawning ---- */

/* Reads the child's report: 0 when it reached exec, else its errno (and
 * the child is reaped). */
static int exec_outcome(pid_t pid, int fd, int *stage) {
  exec_failure f;
  ssize_t n;
  while ((n = read(fd, &f, sizeof f)) < 0 && errno == EINTR) {
  }
  if (n != (ssize_t)sizeof f) return 0;
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  *stage = f.stage;
  return f.err ? f.err : EIO;
}

static void describe_failure(char *err, size_t errlen, int code, int stage, const process_options *o) {
  const char *program = o->argv[0];
  if (stage == 1)
    snprintf(err, errlen, "cannot start '%s': cannot change to the folder '%s': %s", program, o->cwd, strerror(code));
  else if (stage == 2)
    snprintf(err, errlen, "cannot start '%s': cannot connect its standard streams: %s", program, strerror(code));
  else if (code == ENOENT && !strchr(program, '/'))
    snprintf(err, errlen, "program '%s' not found in PATH; give its full path or install it", program);
  else if (code == ENOENT)
    snprintf(err, errlen, "program '%s' not found; check the path", program);
  else if (code == EACCES)
    snprintf(err, errlen, "cannot run '%s': permission denied (is it executable?)", program);
  else
    snprintf(err, errlen, "cannot run '%s': %s", program, strerror(code));
}

int process_spawn(process *p, const process_options *o, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  p->pid = -1;
  p->pidfd = -1;
  for (int i = 0; i < 3; i++) p->fd[i] = -1;
  if (!o->argv || !o->argv[0]) {
    snprintf(err, errlen, "no program to run (argv is empty)");
    return EINVAL;
  }
  char program[PATH_MAX];
  const char *const *envp = o->envp ? o->envp : (const char *const *)environ;
  int code = process_find_program(o->argv[0], process_env_get(envp, "PATH"), program, sizeof program);
  if (code) {
    describe_failure(err, errlen, code, 0, o);
    return code;
  }
  spawn_fds f;
  code = make_fds(&f, o);
  if (code) {
    spawn_fds_close(&f);
    snprintf(err, errlen, "cannot start '%s': cannot make its pipes: %s", o->argv[0], strerror(code));
    return code;
  }
  /* signals blocked across fork: the child must not run our handlers */
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) run_child(&f, o, program, (char *const *)envp);
  int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (pid < 0) {
    spawn_fds_close(&f);
    snprintf(err, errlen, "cannot start '%s': fork failed: %s", o->argv[0], strerror(fork_errno));
    return fork_errno;
  }
  if (o->new_group) setpgid(pid, pid); /* also here: no race with a kill right after */
  close_fd(&f.err_pipe[1]);
  for (int i = 0; i < 3; i++) close_fd(&f.child[i]);
  int stage = 0;
  code = exec_outcome(pid, f.err_pipe[0], &stage);
  if (code) {
    spawn_fds_close(&f);
    describe_failure(err, errlen, code, stage, o);
    return code;
  }
  close_fd(&f.err_pipe[0]);
  p->pid = pid;
  p->new_group = o->new_group;
  for (int i = 0; i < 3; i++) p->fd[i] = f.ours[i];
#ifdef SYS_pidfd_open
  if (!o->no_pidfd) p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (p->pidfd >= 0) fcntl(p->pidfd, F_SETFD, FD_CLOEXEC);
#endif
  return 0;
}

int process_reap(process *p) {
  if (p->reaped) return 1;
  if (p->pid <= 0) return 0;
  int status;
  pid_t r;
  while ((r = waitpid(p->pid, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (r == p->pid) {
    process_decode_status(p, status);
    return 1;
  }
  if (r < 0 && errno == ECHILD) { /* someone else reaped it: its status is lost */
    p->reaped = 1;
    p->exit_code = -1;
    p->signal = 0;
    return 1;
  }
  return 0;
}

int process_kill(process *p, int sig) {
  if (p->pid <= 0) return 0;
  if (p->new_group) return kill(-p->pid, sig) == 0;
  if (p->reaped) return 0;
  return kill(p->pid, sig) == 0;
}

void process_close_stream(process *p, int stream) {
  if (stream >= 0 && stream < 3) close_fd(&p->fd[stream]);
}

void process_release(process *p) {
  for (int i = 0; i < 3; i++) close_fd(&p->fd[i]);
  close_fd(&p->pidfd);
}

/* ---- SIGCHLD, where there is no pidfd ---- */

static int sigchld_pipe[2] = {-1, -1}; /* the handler's only state */

static void on_sigchld(int sig) {
  (void)sig;
  int saved = errno;
  ssize_t n = write(sigchld_pipe[1], "c", 1);
  (void)n; /* a full pipe is readable already */
  errno = saved;
}

int process_sigchld_fd(void) {
  if (sigchld_pipe[0] >= 0) return sigchld_pipe[0];
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  sigchld_pipe[0] = p[0];
  sigchld_pipe[1] = p[1];
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigchld;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGCHLD, &sa, NULL) != 0) {
    close(p[0]);
    close(p[1]);
    sigchld_pipe[0] = sigchld_pipe[1] = -1;
    return -1;
  }
  return sigchld_pipe[0];
}

void process_sigchld_drain(void) {
  char scratch[64];
  if (sigchld_pipe[0] < 0) return;
  while (read(sigchld_pipe[0], scratch, sizeof scratch) > 0) {
  }
}

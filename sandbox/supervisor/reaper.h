/* reaper: one root process per command (run, spawn, the Python kernel, a
 * pack), forked by serve. It is a child subreaper: every process the command
 * starts, however it detaches (setsid, double fork, a cleared environment),
 * stays below it. It forks the command's main process under the command uid
 * (no capabilities left), reaps everything, and kills the whole tree when the
 * main process ends (spawn: only when asked), on request, or when serve goes
 * away. It counts what it killed and whether anything died of a SIGKILL it
 * did not send (OOM evidence).
 *
 * Control (serve -> reaper, one byte each, on `control`):
 *   'K' kill the whole tree now      'C' kill all but the main process, then
 *   'S' <signal byte> signal the main     answer "c <killed>\n" on `status`
 *   process's group                   EOF: as 'K', then exit
 * Status (reaper -> serve, text lines on `status`):
 *   "c <killed>\n"    after a 'C'
 *   "d <main wait status> <killed> <sigkill seen 0|1> <failed step> <errno>\n"
 *                     when everything is gone, just before the reaper exits;
 *                     failed step: 0 none, 1 cwd, 2 exec, 3 user. */
#ifndef SV_REAPER_H
#define SV_REAPER_H

#include <sys/types.h>

enum { STEP_NONE, STEP_CWD, STEP_EXEC, STEP_USER };

typedef struct command_spec {
  char *const *argv;           /* program and arguments (NULL when body is set) */
  char *const *env;            /* the whole environment */
  const char *cwd;             /* NULL: stay where serve is */
  uid_t uid;
  gid_t gid;
  int (*body)(void *ctx);      /* instead of argv: a function run as the command */
  void *body_ctx;
  int keep_tree;               /* spawn: the tree outlives its main process */
  int tty;                     /* stdin is a terminal: the main process makes it its controlling one */
} command_spec;

typedef struct reaper_handle {
  pid_t pid;
  int control; /* serve's write end */
  int status;  /* serve's read end */
} reaper_handle;

/* Forks a reaper for spec. The command's stdin/stdout/stderr are in_fd,
 * out_fd, err_fd; extra_fd (-1: none) becomes its fd 3. The caller closes its
 * copies of those four afterwards. Returns 0, or -1 with errno (fork or pipe
 * failed, e.g. the pids cap). */
int reaper_start(const command_spec *spec, int in_fd, int out_fd, int err_fd, int extra_fd,
                 reaper_handle *h);

#endif

/* process: child processes of the host — the pure core of luagent.process.
 *
 * process_spawn() forks and executes a program (no shell) with each of its
 * standard streams inherited, connected to /dev/null or to a pipe whose other
 * end stays with us, non-blocking and close-on-exec. The child may lead a new
 * process group, so one signal reaches everything it started (a grandchild
 * that double-forked too). The program is looked up in PATH before the fork,
 * so a missing one is ENOENT with its name, not a child that exits 127; an
 * exec that fails later (permissions, a bad interpreter) comes back through a
 * close-on-exec error pipe, as the same kind of errno.
 *
 * How the host learns that a child ended without blocking: where Linux has
 * pidfd_open (5.3 and later), each process has a pidfd that becomes readable
 * when it exits; elsewhere process_sigchld_fd() is the read end of one
 * self-pipe a SIGCHLD handler writes to, after which every child is reaped
 * with process_reap (WNOHANG, by pid: never another part of the program's
 * children). Both are plain descriptors for the event loop (loop.h).
 *
 * No Lua here (src/lua/lua_process.c is the binding). Not thread-safe; the
 * SIGCHLD pipe is the one process-wide state (a signal handler needs it). */
#ifndef LUAGENT_PROCESS_H
#define LUAGENT_PROCESS_H

#include <stddef.h>
#include <sys/types.h>

typedef enum process_stdio { PROCESS_INHERIT, PROCESS_PIPE, PROCESS_NULL } process_stdio;

enum { PROCESS_STDIN = 0, PROCESS_STDOUT = 1, PROCESS_STDERR = 2 };

typedef struct process_options {
  const char *const *argv; /* NULL-terminated; argv[0] a path or a name looked up in PATH */
  const char *const *envp; /* NULL-terminated "NAME=value"; NULL: this process's environment */
  const char *cwd;         /* NULL: this process's */
  process_stdio stdio[3];  /* stdin, stdout, stderr */
  int new_group;           /* the child leads a new process group (its pid is the group id) */
  int no_pidfd;            /* do not open a pidfd (tests of the SIGCHLD path) */
} process_options;

typedef struct process {
  pid_t pid;
  int fd[3];     /* our ends: fd[0] writes the child's stdin, fd[1]/fd[2] read its
                  * stdout/stderr; -1 when not a pipe, or closed */
  int pidfd;     /* readable once the child exited; -1 when there is none */
  int new_group;
  int reaped;    /* waitpid collected it: exit_code and signal are set */
  int exit_code; /* its exit status, or 128 + signal */
  int signal;    /* the signal that ended it, or 0 */
} process;

/* Starts the child. Returns 0 and fills *p, or an errno (ENOENT: the program
 * is not there, EACCES: not executable or cwd refused, ...) with a message in
 * err naming the program, or the cwd. Nothing is left open on failure. */
int process_spawn(process *p, const process_options *o, char *err, size_t errlen);

/* Collects the child's status if it ended (waitpid WNOHANG). Returns 1 when
 * it is reaped (now or before), 0 while it runs. */
int process_reap(process *p);

/* Sends sig to the child's process group (new_group) or to the child. Also
 * after it was reaped when it led a group (what it started may live on).
 * Returns 1 when a process got it, 0 when none was there. */
int process_kill(process *p, int sig);

/* Closes our end of one stream (PROCESS_STDIN, ...); idempotent. */
void process_close_stream(process *p, int stream);

/* Closes every descriptor we hold for the child (its streams, its pidfd).
 * Does not signal or reap it. */
void process_release(process *p);

/* The SIGCHLD self-pipe's read end (installed on first call, with SA_RESTART),
 * or -1 if it cannot be made. Readable after any child ended;
 * process_sigchld_drain() empties it. */
int process_sigchld_fd(void);
void process_sigchld_drain(void);

/* ---- pure helpers ---- */

/* Finds `name` in the colon-separated `path` (NULL: the default
 * "/usr/local/bin:/usr/bin:/bin") like execvp: a name with a '/' is taken as
 * it is. Returns 0 with the file in out, or ENOENT, EACCES (found, but not
 * executable) or ENAMETOOLONG. */
int process_find_program(const char *name, const char *path, char *out, size_t outlen);

/* The value of NAME in a NULL-terminated "NAME=value" list, or NULL. */
const char *process_env_get(const char *const *envp, const char *name);

/* A signal by name ("TERM", "SIGTERM", "term") or number ("15"), or 0. */
int process_signal_number(const char *name);
/* "TERM" for 15, ...; NULL for a number it does not know. */
const char *process_signal_name(int sig);

/* Sets exit_code and signal from a waitpid status. */
void process_decode_status(process *p, int status);

#endif

/* serve: the command server, one per session, started by a Docker exec as
 * uid 0 (`luagent-supervisor serve [UID:GID]`) with the host on its
 * stdin/stdout. It reads requests (src/core/supervisor_proto.h), starts each
 * command under its own reaper (reaper.h), relays output as frames
 * (frames.h) and ends each command with an X frame. Everything it started is
 * killed when its stdin closes (the host went away or closed the session).
 *
 * The pieces, and which way they call (never back):
 *   serve.c   the loop and the requests; calls the three below
 *   python.c  the kernel (the persistent Python interpreter): a job with
 *             hooks; calls jobs.c and stdin.c
 *   jobs.c    a command's life: start, relay, finish. Generic: what a
 *             kernel does differently it learns through its job's hooks
 *             (job_hooks below), never by calling python.c; calls stdin.c
 *   stdin.c   what goes to a command's stdin: a request's bytes, python
 *             code, a spawn's streamed stdin; calls only frames.c */
#ifndef SV_SERVE_H
#define SV_SERVE_H

#include <sys/types.h>

#include "buf.h"
#include "pack.h"
#include "reaper.h"
#include "supervisor_proto.h"

/* How the reaper treats the command: a run's tree ends with its main
 * process, a spawn's outlives it, a pack's main process is pack_main. */
enum job_kind { JOB_RUN, JOB_SPAWN, JOB_PACK };

typedef struct server server;
typedef struct job job;

/* A spawn's pseudo-terminal size (jobs.c), in characters. */
typedef struct term_size {
  unsigned short cols, rows;
} term_size;

/* What a resident job (the kernel, python.c) does differently from a command
 * a request started; jobs.c calls these and knows nothing else of it. A
 * resident job answers to the id of the call it runs (0 between calls), is
 * never found by job_find, and reports its own ends instead of an X frame. */
typedef struct job_hooks {
  /* its calls pipe (the command's fd 3) is readable */
  void (*on_calls)(server *s, job *j);
  /* the reaper answered a 'C' ("c <killed>"): the call's leftovers are gone */
  void (*on_clean)(server *s, job *j, long killed);
  /* its reaper is done (the process died); instead of the X frame */
  void (*on_done)(server *s, job *j);
  /* another command starts beside it: marks what it runs as shared and
   * returns 1 when it runs something, else 0 */
  int (*share)(server *s, job *j);
} job_hooks;

/* A write or eof request waiting until the stdin bytes before its end are in
 * the command's pipe; then its X. */
typedef struct stdin_wait {
  long long id;
  unsigned long long end; /* in_queued when it came */
  int eof;                /* close the pipe then */
  struct stdin_wait *next;
} stdin_wait;

struct job {
  long long id;          /* the request's id (a resident job: its current call's, 0 between calls) */
  enum job_kind kind;
  const job_hooks *hooks; /* NULL, or a resident job's (the kernel's) */
  reaper_handle reaper;
  int out, err;          /* read ends of the command's stdout/stderr, -1 at EOF */
  int in;                /* write end of its stdin, -1 once closed */
  int calls;             /* a resident job's calls pipe (-1 for others) */
  buf input;             /* stdin bytes to write */
  size_t input_sent;     /* how many of them are written */
  int keep_stdin;        /* a spawn's stdin stays open for write requests until eof */
  int tty;               /* in and out are the master of its pseudo-terminal (no err) */
  int stdin_eof;         /* an eof was asked: later writes are refused */
  unsigned long long in_queued, in_written; /* stdin bytes ever queued / ever written into the pipe */
  stdin_wait *waits;     /* write and eof requests not answered yet, in order */
  buf status;            /* a partial line from the reaper */
  buf call_status;       /* a partial line from the calls pipe */
  long long deadline;    /* now_ms() when it times out; 0: never */
  long long drain_until; /* once the reaper is done: output is read until then */
  int killed_on_request, timed_out;
  long long oom_before;
  int shared;            /* another command ran beside it (OOM attribution needs evidence then) */
  int done;              /* the reaper said "d" */
  int main_status, sigkill_seen, failed_step, failed_errno;
  long killed;
  char *what;            /* argv[0] or the path, for messages */
  char *cwd;
  char **argv, **env;    /* owned copies (argv NULL for pack) */
  pack_spec pack;
  struct job *next;
};

struct server {
  uid_t uid;
  gid_t gid;
  char **base_env;   /* the environment every command starts from */
  job *jobs;         /* runs, spawns, packs and the kernel */
  /* python.c's: */
  job *kernel;       /* the Python interpreter, NULL when not running */
  int kernel_lost;   /* a kernel died: the next call reports "r" */
  struct python_call *calls; /* python calls waiting, the first one running */
};

/* Serves the host on stdin/stdout until stdin closes; commands run as
 * user "UID:GID" (NULL: 1000:1000). nproc > 0: RLIMIT_NPROC, inherited by
 * every command, caps the processes of that user (gVisor, where the host's
 * pids cgroup counts the sandbox kernel's threads, not the commands',
 * and Kubernetes, which has no per-pod pids cap). drop_env (NULL: none):
 * variables whose names start with it are not passed to commands.
 * Returns the exit code. */
int serve_main(const char *user, long nproc, const char *drop_env);

/* ---- jobs.c ---- */

/* Starts a run, spawn or pack request as a job (or answers F + X when it
 * cannot start). */
void job_start(server *s, const sv_request *req, enum job_kind kind);
/* Starts a command as a job of this kind; it owns argv and env (NULL-terminated,
 * malloc'd) from now on. pack: for JOB_PACK, copied. hooks: NULL for a
 * request's command; a resident job's (it gets a calls pipe as fd 3 when
 * hooks->on_calls is set). tty: NULL for pipes, else the size of the
 * pseudo-terminal its stdin, stdout and stderr are. NULL (errno set) when it
 * could not start. */
job *job_spawn(server *s, enum job_kind kind, const job_hooks *hooks, long long id, char **argv, char **env,
               const char *cwd, const char *input, size_t input_len, const pack_spec *pack, const term_size *tty);
/* Sets the size of j's pseudo-terminal (its processes get SIGWINCH); 0, or -1 (not a tty). */
int job_resize(job *j, term_size size);
/* The job a request started with this id (never a resident job), or NULL. */
job *job_find(server *s, long long id);
/* Sends one control message to the job's reaper ('K', 'C', or 'S' + signal). */
void job_control(job *j, char op, int signo);
/* Asks for the kill of job j (request: 'k', timeout: 't'). */
void job_kill(job *j, int timed_out);
/* Reads what is ready on fd (stdout 'O' / stderr 'E') of j and relays it
 * under id (0: dropped). Returns 0 at EOF (fd closed and set to -1). */
int job_relay(job *j, int *fd, char kind, long long id);
/* Reads the reaper's status lines; "c" lines go to the job's on_clean hook. */
void job_read_status(server *s, job *j);
/* Ends jobs whose reaper is done and whose output is drained: X frame, free. */
void jobs_finish(server *s, long long now);
/* The exit flags of a finished job ("o", "k", "t" letters) into flags[8]. */
void job_flags(const job *j, char *flags);
/* 1 when the memory cgroup's OOM kills went up since `before` and either
 * there is evidence (a SIGKILL we did not send, exit code 137) or the command
 * ran alone (so the victim, chosen among commands by oom_score_adj 1000,
 * was one of its processes). */
int oom_evident(long long before, int evidence, int shared);
/* Another command runs beside every job but `except` (NULL: none): marks
 * each that runs something as shared (a resident job through its share
 * hook). Returns 1 when any did. */
int jobs_share(server *s, const job *except);
void job_free(job *j);

/* ---- stdin.c ---- */

/* Queues bytes for the job's stdin (written by stdin_feed). 0, or -1 out of memory. */
int stdin_queue(job *j, const char *data, size_t n);
/* Writes what the pipe takes of the queued stdin without blocking, answers
 * the write/eof requests whose bytes are all in, and closes the pipe once
 * everything is written unless it stays open (keep_stdin: a spawn with
 * 'k', the kernel). A pipe whose reader is gone is closed and its requests fail. */
void stdin_feed(job *j);
/* The id a write/eof request targets (its 'w' field), or 0 when it has
 * none or a bad one. */
long long stdin_target(const sv_request *req);
/* A write (eof = 0) or eof request for the stdin of spawn `target`
 * (stdin_target), which is job j (job_find's, NULL when none): queued on
 * that stdin, or answered at once with F + X (1: that stdin is gone or
 * full, 2: the request is wrong). */
void stdin_request(const sv_request *req, int eof, long long target, job *j);
/* Answers every waiting write/eof request of j with F (why) + X 1. */
void stdin_fail(job *j, const char *why);

/* ---- python.c ---- */

/* Queues a python call (runs now if the interpreter is free). */
void python_request(server *s, const sv_request *req);
/* Kills python call id if it is queued or running; 0 when it is not a call. */
int python_kill(server *s, long long id, int timed_out);
/* Drops every call (at shutdown). */
void python_free(server *s);

#endif

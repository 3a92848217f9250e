/* jobs: one command's life inside serve (see serve.h): its pipes and reaper,
 * relaying its output, and its X frame with the kill count and OOM flag.
 * Generic: a resident job (the kernel) differs only through the hooks its
 * owner set (job_hooks, serve.h); nothing here calls python.c. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frames.h"
#include "proctree.h"
#include "serve.h"

#define DRAIN_MS 200 /* output still read after a command's tree is gone */

/* ---- building a command ---- */

static char *copy_field(const sv_field *f) {
  char *s = malloc(f->len + 1);
  if (s) {
    memcpy(s, f->data, f->len);
    s[f->len] = '\0';
  }
  return s;
}

static void free_list(char **list) {
  for (size_t i = 0; list && list[i]; i++) free(list[i]);
  free(list);
}

/* The fields with this tag as a NULL-terminated list of strings. */
static char **collect(const sv_request *req, char tag) {
  char **list = calloc(req->nfields + 1, sizeof *list);
  size_t n = 0;
  for (size_t i = 0; list && i < req->nfields; i++)
    if (req->fields[i].tag == tag && !(list[n++] = copy_field(&req->fields[i]))) {
      free_list(list);
      return NULL;
    }
  return list;
}

static int same_name(const char *a, const char *b) {
  size_t n = strcspn(a, "=");
  return strncmp(a, b, n) == 0 && b[n] == '=';
}

/* base_env, each entry replaced by the request's entry of the same name, then
 * the request's new names. */
static char **merged_env(char **base, char **extra) {
  size_t nb = 0, ne = 0;
  while (base[nb]) nb++;
  while (extra[ne]) ne++;
  char **env = calloc(nb + ne + 1, sizeof *env);
  if (!env) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < nb; i++) {
    int replaced = 0;
    for (size_t k = 0; k < ne && !replaced; k++) replaced = same_name(extra[k], base[i]);
    if (!replaced) env[n++] = strdup(base[i]);
  }
  for (size_t k = 0; k < ne; k++) env[n++] = strdup(extra[k]);
  return env;
}

/* ---- starting ---- */

static int make_pipe(int fds[2], int serve_end) {
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  fcntl(fds[serve_end], F_SETFL, O_NONBLOCK);
  return 0;
}

int job_resize(job *j, term_size size) {
  struct winsize w = {.ws_row = size.rows ? size.rows : 24, .ws_col = size.cols ? size.cols : 80};
  if (!j->tty || j->out < 0) return -1;
  return ioctl(j->out, TIOCSWINSZ, &w);
}

/* A pseudo-terminal as the three pipes would be: the command's ends (in[0],
 * out[1], err[1]) are its terminal, serve's (in[1], out[0]) its master;
 * err[0] stays -1 (a terminal has one output). The terminal belongs to the
 * command's user, as a login's does. */
static int make_tty(const server *s, int in[2], int out[2], int err[2], term_size size) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[64];
  if (master < 0) return -1;
  int terminal = -1;
  if (grantpt(master) == 0 && unlockpt(master) == 0 && ptsname_r(master, name, sizeof name) == 0)
    terminal = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (terminal < 0) {
    close(master);
    return -1;
  }
  if (fchown(terminal, s->uid, s->gid) != 0) { /* best effort: the fds work without it */ }
  struct winsize w = {.ws_row = size.rows ? size.rows : 24, .ws_col = size.cols ? size.cols : 80};
  ioctl(master, TIOCSWINSZ, &w);
  fcntl(master, F_SETFL, O_NONBLOCK);
  in[0] = terminal, out[1] = fcntl(terminal, F_DUPFD_CLOEXEC, 0), err[1] = fcntl(terminal, F_DUPFD_CLOEXEC, 0);
  in[1] = master, out[0] = fcntl(master, F_DUPFD_CLOEXEC, 0);
  return out[1] >= 0 && err[1] >= 0 && out[0] >= 0 ? 0 : -1;
}

job *job_spawn(server *s, enum job_kind kind, const job_hooks *hooks, long long id, char **argv, char **env,
               const char *cwd, const char *input, size_t input_len, const pack_spec *pack, const term_size *tty) {
  job *j = calloc(1, sizeof *j);
  if (!j) {
    free_list(argv), free_list(env);
    return NULL;
  }
  *j = (job){.id = id, .kind = kind, .hooks = hooks, .out = -1, .err = -1, .in = -1, .calls = -1, .argv = argv, .env = env,
             .reaper = {0, -1, -1}, .oom_before = oom_kill_count()};
  j->cwd = cwd ? strdup(cwd) : NULL;
  j->what = strdup(pack ? pack->path : argv[0]);
  if (pack) j->pack = *pack, j->pack.path = j->what;
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, calls[2] = {-1, -1};
  int ok = j->what && stdin_queue(j, input, input_len) == 0 &&
           (tty ? make_tty(s, in, out, err, *tty) == 0 : make_pipe(in, 1) == 0 && make_pipe(out, 0) == 0 &&
                                                         make_pipe(err, 0) == 0) &&
           (!hooks || !hooks->on_calls || make_pipe(calls, 0) == 0);
  j->in = in[1], j->out = out[0], j->err = err[0], j->calls = calls[0], j->tty = tty != NULL;
  if (ok) {
    command_spec spec = {argv, env, j->cwd, s->uid, s->gid, NULL, NULL, kind == JOB_SPAWN, tty != NULL};
    if (kind == JOB_PACK) spec.body = pack_main, spec.body_ctx = &j->pack;
    ok = reaper_start(&spec, in[0], out[1], err[1], calls[1], &j->reaper) == 0;
  }
  int saved = errno;
  int child_ends[] = {in[0], out[1], err[1], calls[1]};
  for (size_t i = 0; i < 4; i++)
    if (child_ends[i] >= 0) close(child_ends[i]);
  if (!ok) {
    job_free(j);
    errno = saved ? saved : ENOMEM;
    return NULL;
  }
  if (!hooks && jobs_share(s, NULL)) j->shared = 1; /* a resident job's calls do their own sharing */
  j->next = s->jobs;
  s->jobs = j;
  return j;
}

/* Why the request cannot start, or NULL. */
static const char *check_request(const sv_request *req, enum job_kind kind, char **argv, char **env,
                                 long long *timeout) {
  if (!env) return "out of memory";
  if (kind != JOB_PACK && (!argv || !argv[0])) return "no program (no 'a' field)";
  if (kind == JOB_PACK && !sv_field_find(req, SV_TAG_PATH)) return "no path (no 'p' field)";
  if (sv_field_number(req, SV_TAG_TIMEOUT, timeout) < 0) return "the timeout is not a decimal";
  return NULL;
}

void job_start(server *s, const sv_request *req, enum job_kind kind) {
  long long timeout = 0;
  char **argv = kind == JOB_PACK ? NULL : collect(req, SV_TAG_ARG);
  char **extra = collect(req, SV_TAG_ENV);
  char **env = extra ? merged_env(s->base_env, extra) : NULL;
  free_list(extra);
  const sv_field *cwd = sv_field_find(req, SV_TAG_CWD), *input = sv_field_find(req, SV_TAG_STDIN);
  const char *problem = check_request(req, kind, argv, env, &timeout);
  pack_spec pack = {0};
  const sv_field *path = sv_field_find(req, SV_TAG_PATH);
  char *path_text = path ? copy_field(path) : NULL, *cwd_text = cwd ? copy_field(cwd) : NULL;
  pack.path = path_text;
  sv_field_number(req, SV_TAG_MAXBYTES, &pack.max_bytes);
  sv_field_number(req, SV_TAG_MAXENTRIES, &pack.max_entries);
  long long cols = 0, rows = 0;
  sv_field_number(req, SV_TAG_COLS, &cols);
  sv_field_number(req, SV_TAG_ROWS, &rows);
  term_size size = {(unsigned short)(cols > 0 && cols < 10000 ? cols : 0), (unsigned short)(rows > 0 && rows < 10000 ? rows : 0)};
  int tty = kind == JOB_SPAWN && sv_field_find(req, SV_TAG_TTY) != NULL;
  job *j = NULL;
  if (problem) {
    free_list(argv), free_list(env);
  } else {
    j = job_spawn(s, kind, NULL, req->id, argv, env, cwd_text, input ? input->data : NULL, input ? input->len : 0,
                  kind == JOB_PACK ? &pack : NULL, tty ? &size : NULL);
    if (!j) problem = strerror(errno);
  }
  free(cwd_text);
  free(path_text);
  if (!j) {
    frame_failure(req->id, "cannot start: %s", problem);
    frame_exit(req->id, 126, "-", 0);
  } else {
    if (timeout > 0) j->deadline = now_ms() + timeout;
    j->keep_stdin = kind == JOB_SPAWN && (tty || sv_field_find(req, SV_TAG_KEEPSTDIN) != NULL);
    stdin_feed(j); /* the request's stdin; closed after it unless kept open */
  }
}

/* ---- while it runs ---- */

job *job_find(server *s, long long id) {
  for (job *j = s->jobs; j; j = j->next)
    if (j->id == id && !j->hooks) return j;
  return NULL;
}

void job_control(job *j, char op, int signo) {
  char msg[2] = {op, (char)signo};
  if (j->reaper.control >= 0) write_all(j->reaper.control, msg, op == 'S' ? 2 : 1);
}

void job_kill(job *j, int timed_out) {
  if (j->done) return;
  if (timed_out) j->timed_out = 1;
  else j->killed_on_request = 1;
  job_control(j, 'K', 0);
}

int job_relay(job *j, int *fd, char kind, long long id) {
  char chunk[65536];
  (void)j;
  for (;;) {
    ssize_t n = read_some(*fd, chunk, sizeof chunk);
    if (n > 0) {
      if (id) frame_data(kind, id, chunk, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EAGAIN) return 1;
    close(*fd);
    *fd = -1;
    return 0;
  }
}

static void on_status_line(server *s, job *j, const char *line) {
  long killed = 0;
  if (line[0] == 'c' && sscanf(line, "c %ld", &killed) == 1) {
    if (j->hooks && j->hooks->on_clean) j->hooks->on_clean(s, j, killed);
  } else if (line[0] == 'd' && sscanf(line, "d %d %ld %d %d %d", &j->main_status, &j->killed, &j->sigkill_seen,
                                      &j->failed_step, &j->failed_errno) == 5) {
    j->done = 1;
    j->drain_until = now_ms() + DRAIN_MS;
  }
}

void job_read_status(server *s, job *j) {
  char chunk[512];
  ssize_t n = read_some(j->reaper.status, chunk, sizeof chunk);
  if (n > 0) buf_append(&j->status, chunk, (size_t)n);
  for (char *nl; j->status.len && (nl = memchr(j->status.data, '\n', j->status.len));) {
    *nl = '\0';
    on_status_line(s, j, j->status.data);
    buf_consume(&j->status, (size_t)(nl - j->status.data) + 1);
  }
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    close(j->reaper.status);
    j->reaper.status = -1;
    if (!j->done) j->done = 1, j->main_status = SIGKILL, j->drain_until = now_ms(); /* the reaper died */
  }
}

/* ---- the end ---- */

int oom_evident(long long before, int evidence, int shared) {
  long long after = oom_kill_count();
  return (evidence || !shared) && before >= 0 && after > before;
}

/* Another command runs beside j: 1 when j runs something (marked shared). */
static int share(server *s, job *j) {
  if (j->hooks) return j->hooks->share ? j->hooks->share(s, j) : 0;
  if (j->done) return 0;
  j->shared = 1;
  return 1;
}

int jobs_share(server *s, const job *except) {
  int any = 0;
  for (job *j = s->jobs; j; j = j->next)
    if (j != except) any |= share(s, j);
  return any;
}

void job_flags(const job *j, char *flags) {
  int n = 0;
  int code = exit_code_of(j->main_status);
  if (j->killed_on_request) flags[n++] = 'k';
  if (j->timed_out) flags[n++] = 't';
  if (!n && oom_evident(j->oom_before, j->sigkill_seen || code == 128 + SIGKILL, j->shared)) flags[n++] = 'o';
  flags[n] = '\0';
}

static void say_failure(const server *s, const job *j) {
  const char *why = strerror(j->failed_errno);
  if (j->failed_step == STEP_EXEC) frame_failure(j->id, "cannot run %s: %s", j->what, why);
  if (j->failed_step == STEP_CWD) frame_failure(j->id, "cannot enter %s: %s", j->cwd ? j->cwd : "", why);
  if (j->failed_step == STEP_USER) frame_failure(j->id, "cannot become uid %d: %s", (int)s->uid, why);
}

/* Relays the last output and ends one job with its X frame. */
static void finish(server *s, job *j) {
  if (j->out >= 0) job_relay(j, &j->out, 'O', j->id);
  if (j->err >= 0) job_relay(j, &j->err, 'E', j->id);
  stdin_fail(j, "the process ended");
  if (j->hooks && j->hooks->on_done) {
    j->hooks->on_done(s, j);
  } else {
    char flags[8];
    job_flags(j, flags);
    say_failure(s, j);
    frame_exit(j->id, exit_code_of(j->main_status), flags, j->killed);
  }
  if (j->reaper.pid > 0) waitpid(j->reaper.pid, NULL, 0);
}

void jobs_finish(server *s, long long now) {
  for (job **link = &s->jobs; *link;) {
    job *j = *link;
    if (j->done && ((j->out < 0 && j->err < 0) || now >= j->drain_until)) {
      *link = j->next;
      finish(s, j);
      job_free(j);
    } else {
      link = &j->next;
    }
  }
}

void job_free(job *j) {
  if (!j) return;
  int fds[] = {j->out, j->err, j->in, j->calls, j->reaper.control, j->reaper.status};
  for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if (fds[i] >= 0) close(fds[i]);
  while (j->waits) {
    stdin_wait *w = j->waits;
    j->waits = w->next;
    free(w);
  }
  buf_free(&j->input);
  buf_free(&j->status);
  buf_free(&j->call_status);
  free_list(j->argv);
  free_list(j->env);
  free(j->what);
  free(j->cwd);
  free(j);
}

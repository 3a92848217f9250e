/* serve: the command server's loop and requests (see serve.h). One thread,
 * one poll over the host's stdin and every job's pipes. */
#include "serve.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "frames.h"
#include "listing.h"
#include "watch.h"

enum watch { W_OUT, W_ERR, W_IN, W_STATUS, W_CALLS };

typedef struct poll_set {
  struct pollfd *fds;
  job **jobs;
  enum watch *what;
  size_t n, cap;
} poll_set;

/* ---- requests: op NAME of src/core/supervisor_ops.def is handled by op_NAME ---- */

static void op_run(server *s, const sv_request *req) { job_start(s, req, JOB_RUN); }
static void op_spawn(server *s, const sv_request *req) { job_start(s, req, JOB_SPAWN); }
static void op_pack(server *s, const sv_request *req) { job_start(s, req, JOB_PACK); }
static void op_list(server *s, const sv_request *req) { list_request(req, s->uid, s->gid); }
static void op_read(server *s, const sv_request *req) { read_request(req, s->uid, s->gid); }
static void op_put(server *s, const sv_request *req) { put_request(req, s->uid, s->gid); }

/* skill: a file of an agent's skill, written as root under SKILLS_DIR (a
 * root-owned tmpfs or emptyDir, mode 0755): the command user reads it, and
 * cannot change it. Any other path is refused; open_place refuses "." and
 * ".." components and links on the way. */
#define SKILLS_DIR "/skills/"
static void op_skill(server *s, const sv_request *req) {
  const sv_field *path = sv_field_find(req, SV_TAG_PATH);
  (void)s;
  if (!path || path->len <= strlen(SKILLS_DIR) || memcmp(path->data, SKILLS_DIR, strlen(SKILLS_DIR)) != 0) {
    frame_failure(req->id, "refused: a skill's file goes under %s", SKILLS_DIR);
    frame_exit(req->id, 1, "-", 0);
    return;
  }
  put_request(req, 0, 0);
}
static void op_python(server *s, const sv_request *req) { python_request(s, req); }

static void op_kill(server *s, const sv_request *req) {
  job *j = job_find(s, req->id);
  if (j) job_kill(j, 0);
  else python_kill(s, req->id, 0);
}

static void op_signal(server *s, const sv_request *req) {
  long long signo = 0;
  job *j = job_find(s, req->id);
  if (!j && s->kernel && s->kernel->id == req->id) j = s->kernel;
  if (sv_field_number(req, SV_TAG_SIGNAL, &signo) == 0 && signo > 0 && signo < 65 && j && !j->done)
    job_control(j, 'S', (int)signo);
}

static void op_resize(server *s, const sv_request *req) {
  long long cols = 0, rows = 0;
  job *j = job_find(s, req->id);
  sv_field_number(req, SV_TAG_COLS, &cols);
  sv_field_number(req, SV_TAG_ROWS, &rows);
  if (j && !j->done && cols >= 0 && cols < 10000 && rows >= 0 && rows < 10000)
    job_resize(j, (term_size){(unsigned short)cols, (unsigned short)rows});
}

static void on_stdin_request(server *s, const sv_request *req, int eof) {
  long long target = stdin_target(req);
  stdin_request(req, eof, target, target ? job_find(s, target) : NULL);
}
static void op_write(server *s, const sv_request *req) { on_stdin_request(s, req, 0); }
static void op_eof(server *s, const sv_request *req) { on_stdin_request(s, req, 1); }

/* watch: the folder p whose change generation every X carries from now on (watch.h). */
static void op_watch(server *s, const sv_request *req) {
  const sv_field *path = sv_field_find(req, SV_TAG_PATH);
  const char *why = path ? watch_start(path->data, path->len, s->uid, s->gid) : "no path (no 'p' field)";
  if (why) frame_failure(req->id, "cannot watch: %s", why);
  frame_exit(req->id, why ? 1 : 0, "-", 0);
}

/* The dispatch table: every op of the declaration, with its handler. */
static const struct op_handler {
  const char *name;
  void (*handle)(server *s, const sv_request *req);
} HANDLERS[] = {
#define SV_OP(name, answer, fields) {#name, op_##name},
#include "supervisor_ops.def"
#undef SV_OP
    {NULL, NULL}};

static void dispatch(server *s, const sv_request *req) {
  for (const struct op_handler *h = HANDLERS; h->name; h++)
    if (strcmp(h->name, req->op) == 0) {
      h->handle(s, req);
      return;
    }
  frame_failure(req->id, "unknown request '%s' (this supervisor speaks version %s)", req->op, SV_VERSION);
  frame_exit(req->id, 2, "-", 0);
}

/* Reads from the host and runs every whole request. Returns 0 at EOF. */
static int read_host(server *s, buf *inbox, size_t *need) {
  char chunk[65536];
  ssize_t n = read_some(0, chunk, sizeof chunk);
  if (n <= 0) return n < 0 && errno == EAGAIN;
  buf_append(inbox, chunk, (size_t)n);
  size_t start = 0;
  while (inbox->len - start >= *need) {
    sv_request req;
    size_t used;
    const char *error = NULL;
    int rc = sv_parse(inbox->data + start, inbox->len - start, &req, &used, &error);
    if (rc < 0) {
      fprintf(stderr, "luagent-supervisor: not a request (%s); stopping\n", error);
      return 0;
    }
    if (rc == 0) {
      *need = used;
      break;
    }
    dispatch(s, &req);
    sv_request_free(&req);
    start += used;
    *need = 1;
  }
  buf_consume(inbox, start);
  return 1;
}

/* ---- the poll set ---- */

static void watch(poll_set *p, int fd, short events, job *j, enum watch what) {
  if (fd < 0) return;
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 32;
    struct pollfd *fds = realloc(p->fds, cap * sizeof *fds);
    job **jobs = fds ? realloc(p->jobs, cap * sizeof *jobs) : NULL;
    enum watch *whats = jobs ? realloc(p->what, cap * sizeof *whats) : NULL;
    if (fds) p->fds = fds;
    if (jobs) p->jobs = jobs;
    if (!whats) return;
    p->what = whats;
    p->cap = cap;
  }
  p->fds[p->n] = (struct pollfd){fd, events, 0};
  p->jobs[p->n] = j;
  p->what[p->n++] = what;
}

/* Fills the set; returns the poll timeout in ms (-1: none). */
static int build_poll_set(server *s, poll_set *p, long long now) {
  p->n = 0;
  watch(p, 0, POLLIN, NULL, W_OUT);
  long long next = -1;
  for (job *j = s->jobs; j; j = j->next) {
    watch(p, j->out, POLLIN, j, W_OUT);
    watch(p, j->err, POLLIN, j, W_ERR);
    if (j->input_sent < j->input.len) watch(p, j->in, POLLOUT, j, W_IN);
    watch(p, j->reaper.status, POLLIN, j, W_STATUS);
    watch(p, j->calls, POLLIN, j, W_CALLS);
    long long when = j->done ? j->drain_until : j->deadline;
    if (when > 0 && (next < 0 || when < next)) next = when;
  }
  if (next < 0) return -1;
  return next <= now ? 0 : (int)(next - now < 1000000 ? next - now : 1000000);
}

static void on_ready(server *s, job *j, enum watch what) {
  if (what == W_OUT && j->out >= 0) job_relay(j, &j->out, 'O', j->id);
  if (what == W_ERR && j->err >= 0) job_relay(j, &j->err, 'E', j->id);
  if (what == W_IN) stdin_feed(j);
  if (what == W_STATUS && j->reaper.status >= 0) job_read_status(s, j);
  if (what == W_CALLS && j->calls >= 0) j->hooks->on_calls(s, j); /* only a resident job has one */
}

static void check_deadlines(server *s, long long now) {
  for (job *j = s->jobs; j; j = j->next) {
    if (j->done || !j->deadline || now < j->deadline) continue;
    j->deadline = 0;
    job_kill(j, 1); /* the kernel has a deadline only while a call runs: that call is killed */
  }
}

/* ---- setting up and shutting down ---- */

/* HOME of uid in /etc/passwd, or NULL. */
static char *home_of(uid_t uid) {
  FILE *f = fopen("/etc/passwd", "re");
  char line[1024], *home = NULL;
  while (f && !home && fgets(line, sizeof line, f)) {
    char *field[7] = {line};
    int n = 1;
    for (char *p = line; *p && n < 7; p++)
      if (*p == ':') *p = '\0', field[n++] = p + 1;
    if (n == 7 && strtoul(field[2], NULL, 10) == uid && field[2][0]) home = strdup(field[5]);
  }
  if (f) fclose(f);
  return home;
}

/* The environment commands start from: the container's, HOME from the
 * passwd entry of uid, without the variables whose names start with
 * drop_prefix (NULL: none) — on Kubernetes, KUBERNETES_: the kubelet puts
 * the API server's address in every container, enableServiceLinks or not. */
static char **command_env(uid_t uid, const char *drop_prefix) {
  extern char **environ;
  size_t n = 0;
  while (environ[n]) n++;
  char **env = calloc(n + 2, sizeof *env);
  char *home = uid ? home_of(uid) : NULL;
  size_t k = 0;
  for (size_t i = 0; env && i < n; i++)
    if (!(home && strncmp(environ[i], "HOME=", 5) == 0) &&
        !(drop_prefix && *drop_prefix && strncmp(environ[i], drop_prefix, strlen(drop_prefix)) == 0))
      env[k++] = strdup(environ[i]);
  if (env && home && (env[k] = malloc(strlen(home) + 6))) sprintf(env[k], "HOME=%s", home);
  free(home);
  return env;
}

static void shut_down(server *s) {
  for (job *j = s->jobs; j; j = j->next)
    if (j->reaper.control >= 0) close(j->reaper.control), j->reaper.control = -1; /* the reaper kills its tree */
  for (job *j = s->jobs; j; j = j->next)
    if (j->reaper.pid > 0) waitpid(j->reaper.pid, NULL, 0);
  while (s->jobs) {
    job *j = s->jobs;
    s->jobs = j->next;
    job_free(j);
  }
  python_free(s);
}

int serve_main(const char *user, long nproc, const char *drop_env) {
  server s = {.uid = 1000, .gid = 1000};
  unsigned uid, gid;
  if (user && sscanf(user, "%u:%u", &uid, &gid) == 2) s.uid = uid, s.gid = gid;
  if (nproc > 0) {
    struct rlimit cap = {(rlim_t)nproc, (rlim_t)nproc};
    if (setrlimit(RLIMIT_NPROC, &cap) != 0) return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_DUMPABLE, 0);
  s.base_env = command_env(s.uid, drop_env);
  if (!s.base_env) return 1;
  buf inbox = BUF_INIT;
  size_t need = 1;
  poll_set p = {0};
  frame_ready();
  for (int open = 1; open;) {
    long long now = now_ms();
    int timeout = build_poll_set(&s, &p, now);
    if (poll(p.fds, p.n, timeout) < 0 && errno != EINTR) break;
    for (size_t i = 0; i < p.n && open; i++) {
      if (!p.fds[i].revents) continue;
      if (!p.jobs[i]) open = read_host(&s, &inbox, &need);
      else on_ready(&s, p.jobs[i], p.what[i]);
    }
    now = now_ms();
    check_deadlines(&s, now);
    jobs_finish(&s, now);
  }
  shut_down(&s);
  for (size_t i = 0; s.base_env[i]; i++) free(s.base_env[i]);
  free(s.base_env);
  buf_free(&inbox);
  free(p.fds), free(p.jobs), free(p.what);
  return 0;
}

/* python: the `python` op (see serve.h): calls queue for one persistent
 * interpreter, the kernel (kernel.c's source run by python3 as the command
 * uid, under its own reaper). A call ends when the kernel reports it on its
 * calls pipe; then everything the call started is killed ('C' to the reaper)
 * and counted. When the interpreter dies (killed, timed out, OOM, os._exit),
 * its call ends with what killed it and the next call, in a new interpreter,
 * says "r".
 *
 * The kernel is a resident job of jobs.c: this file starts it with the hooks
 * at the end (KERNEL_HOOKS), through which jobs.c and serve.c tell it about
 * its calls pipe, the reaper's clean-ups, its death and other commands. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "kernel.h"
#include "proctree.h"
#include "serve.h"

typedef struct python_call {
  long long id, timeout, oom_before;
  buf code;
  int restarted;      /* runs in a new interpreter after one was lost */
  int ended;          /* the kernel reported it: waiting for the clean-up */
  int shared;         /* another command ran beside it */
  int exit_code;
  struct python_call *next;
} python_call;

static void pop_call(server *s) {
  python_call *c = s->calls;
  s->calls = c->next;
  buf_free(&c->code);
  free(c);
}

static const job_hooks KERNEL_HOOKS;

static job *start_kernel(server *s) {
  char **argv = calloc(5, sizeof *argv);
  size_t n = 0;
  while (s->base_env[n]) n++;
  char **env = calloc(n + 1, sizeof *env);
  if (!argv || !env) {
    free(argv), free(env);
    return NULL;
  }
  for (size_t i = 0; i < n; i++) env[i] = strdup(s->base_env[i]);
  argv[0] = strdup("python3"), argv[1] = strdup("-u"), argv[2] = strdup("-c"), argv[3] = strdup(kernel_source);
  job *kernel = job_spawn(s, JOB_RUN, &KERNEL_HOOKS, 0, argv, env, NULL, NULL, 0, NULL, NULL);
  if (kernel) {
    free(kernel->what);
    kernel->what = strdup("python3");
    kernel->keep_stdin = 1; /* calls come one after another */
  }
  return kernel;
}

/* Starts the first queued call when the interpreter is free. */
static void python_next(server *s) {
  /* a kernel that died between calls is finished (on_done) before the next call */
  while (s->calls && !(s->kernel && (s->kernel->id || s->kernel->done))) {
    python_call *c = s->calls;
    if (!s->kernel) {
      s->kernel = start_kernel(s);
      if (!s->kernel) {
        frame_failure(c->id, "cannot start python3: %s", strerror(errno));
        frame_exit(c->id, 126, "-", 0);
        pop_call(s);
        continue;
      }
      c->restarted = s->kernel_lost;
      s->kernel_lost = 0;
    }
    job *k = s->kernel;
    k->id = c->id;
    k->killed_on_request = k->timed_out = 0;
    k->deadline = c->timeout > 0 ? now_ms() + c->timeout : 0;
    c->oom_before = oom_kill_count();
    if (jobs_share(s, k)) c->shared = 1;
    char head[32];
    int n = snprintf(head, sizeof head, "%zu\n", c->code.len);
    stdin_queue(k, head, (size_t)n);
    stdin_queue(k, c->code.data, c->code.len);
    stdin_feed(k);
    return;
  }
}

void python_request(server *s, const sv_request *req) {
  const sv_field *code = sv_field_find(req, SV_TAG_CODE);
  long long timeout = 0;
  python_call *c = calloc(1, sizeof *c);
  if (!code || sv_field_number(req, SV_TAG_TIMEOUT, &timeout) < 0 || !c ||
      buf_append(&c->code, code->data, code->len) != 0) {
    frame_failure(req->id, "cannot start: %s", c ? "python needs a 'c' field and a decimal timeout" : "out of memory");
    frame_exit(req->id, 126, "-", 0);
    if (c) buf_free(&c->code);
    free(c);
    return;
  }
  c->id = req->id;
  c->timeout = timeout;
  python_call **tail = &s->calls;
  while (*tail) tail = &(*tail)->next;
  *tail = c;
  python_next(s);
}

static void drain(job *k) {
  if (k->out >= 0) job_relay(k, &k->out, 'O', k->id);
  if (k->err >= 0) job_relay(k, &k->err, 'E', k->id);
}

/* on_calls: the kernel said a call ended: "<exit code>\n" lines. */
static void read_calls(server *s, job *k) {
  char chunk[256];
  ssize_t n = read_some(k->calls, chunk, sizeof chunk);
  if (n > 0) buf_append(&k->call_status, chunk, (size_t)n);
  for (char *nl; k->call_status.len && (nl = memchr(k->call_status.data, '\n', k->call_status.len));) {
    python_call *c = s->calls;
    if (c && k->id == c->id && !c->ended) {
      c->ended = 1;
      c->exit_code = atoi(k->call_status.data);
      k->deadline = 0;
      drain(k);
      job_control(k, 'C', 0); /* the answer comes to on_clean */
    }
    buf_consume(&k->call_status, (size_t)(nl - k->call_status.data) + 1);
  }
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    close(k->calls);
    k->calls = -1;
  }
}

/* on_clean: the reaper answered the 'C' after a call: that call ends now. */
static void on_clean(server *s, job *k, long killed) {
  python_call *c = s->calls;
  if (!c || !c->ended || k->id != c->id) return;
  drain(k);
  char flags[4];
  int n = 0;
  if (oom_evident(c->oom_before, 0, c->shared)) flags[n++] = 'o'; /* e.g. a subprocess of the call */
  if (c->restarted) flags[n++] = 'r';
  flags[n] = '\0';
  frame_exit(c->id, c->exit_code, flags, killed);
  k->id = 0;
  pop_call(s);
  python_next(s);
}

/* on_done: the kernel's reaper is done (the interpreter died). */
static void on_done(server *s, job *k) {
  python_call *c = s->calls;
  if (s->kernel == k) s->kernel = NULL;
  if (c && k->id == c->id) {
    char flags[8];
    int n = 0, code = exit_code_of(k->main_status);
    if (k->failed_step) frame_failure(c->id, "cannot run python3: %s", strerror(k->failed_errno));
    if (k->killed_on_request) flags[n++] = 'k';
    if (k->timed_out) flags[n++] = 't';
    if (!n && oom_evident(c->oom_before, k->sigkill_seen || code == 128 + SIGKILL, c->shared)) flags[n++] = 'o';
    if (c->restarted) flags[n++] = 'r';
    flags[n] = '\0';
    frame_exit(c->id, code, flags, k->killed);
    pop_call(s);
  }
  if (!k->failed_step) s->kernel_lost = 1, jobs_share(s, NULL); /* it may have been the OOM victim */
  python_next(s);
}

int python_kill(server *s, long long id, int timed_out) {
  if (s->kernel && s->kernel->id == id && id) {
    job_kill(s->kernel, timed_out);
    return 1;
  }
  for (python_call **link = &s->calls; *link; link = &(*link)->next) {
    if ((*link)->id != id) continue;
    python_call *c = *link;
    *link = c->next;
    frame_exit(c->id, 137, timed_out ? "t" : "k", 0);
    buf_free(&c->code);
    free(c);
    return 1;
  }
  return 0;
}

/* share: another command started while a call runs: the call is shared. */
static int share(server *s, job *k) {
  (void)k;
  if (!s->calls || !s->kernel || s->kernel->id != s->calls->id) return 0;
  s->calls->shared = 1;
  return 1;
}

void python_free(server *s) {
  while (s->calls) pop_call(s);
}

static const job_hooks KERNEL_HOOKS = {read_calls, on_clean, on_done, share};

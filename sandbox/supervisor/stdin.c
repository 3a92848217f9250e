/* stdin: what serve writes to a command's stdin (see serve.h) — the bytes
 * of a run or spawn request, python code for the kernel, and a spawn's
 * streamed stdin: `write` requests append bytes, `eof` closes it. It is
 * given the job it writes to and calls nothing above it (only frames.c):
 * serve.c finds the target of a write, jobs.c and python.c queue and feed.
 *
 * Bytes wait in the job's input buffer until the pipe takes them; nothing
 * here blocks. A write is answered (its X, code 0) once its last byte is in
 * the pipe, so a process that reads slowly holds back its writer and never
 * serve: serve refuses a write (X 3) while SV_STDIN_WINDOW bytes already wait
 * for the pipe, and a writer that waits for each X before the next keeps at
 * most one write's bytes here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "frames.h"
#include "serve.h"

#define COMPACT_AT (256u * 1024) /* written bytes dropped from the buffer's front past this */

int stdin_queue(job *j, const char *data, size_t n) {
  if (n && buf_append(&j->input, data, n) != 0) return -1;
  j->in_queued += n;
  return 0;
}

void stdin_fail(job *j, const char *why) {
  while (j->waits) {
    stdin_wait *w = j->waits;
    j->waits = w->next;
    frame_failure(w->id, "the stdin of command %lld: %s", j->id, why);
    frame_exit(w->id, 1, "-", 0);
    free(w);
  }
}

static void close_input(job *j) {
  if (j->in >= 0) close(j->in);
  j->in = -1;
  buf_clear(&j->input);
  j->input_sent = 0;
  j->in_written = j->in_queued;
}

/* Answers the requests whose bytes are all in the pipe (an eof closes it). */
static void answer_waits(job *j) {
  while (j->waits && j->in_written >= j->waits->end) {
    stdin_wait *w = j->waits;
    j->waits = w->next;
    if (w->eof) close_input(j);
    frame_exit(w->id, 0, "-", 0);
    free(w);
  }
}

void stdin_feed(job *j) {
  while (j->in >= 0 && j->input_sent < j->input.len) {
    ssize_t n = write(j->in, j->input.data + j->input_sent, j->input.len - j->input_sent);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) { /* the command closed its stdin: the rest is dropped */
      close_input(j);
      stdin_fail(j, "the process closed it (or ended) before reading everything written");
      break;
    }
    j->input_sent += (size_t)n;
    j->in_written += (unsigned long long)n;
  }
  if (j->input_sent == j->input.len) {
    buf_clear(&j->input);
    j->input_sent = 0;
  } else if (j->input_sent >= COMPACT_AT) {
    buf_consume(&j->input, j->input_sent);
    j->input_sent = 0;
  }
  answer_waits(j);
  if (j->in >= 0 && j->input.len == 0 && !j->keep_stdin) close_input(j);
}

/* F (the message) + X code for request id. */
static void refuse(long long id, int code, const char *fmt, long long target) {
  char text[200];
  snprintf(text, sizeof text, fmt, target);
  frame_failure(id, "%s", text);
  frame_exit(id, code, "-", 0);
}

/* Why a write/eof to j (target) cannot be queued: sets *code and returns the
 * message (%lld: target), or NULL. */
static const char *stdin_problem(const job *j, int eof, int *code) {
  *code = 1;
  if (!j || j->done) return eof ? NULL : "the stdin of command %lld: the process ended"; /* eof: closed already */
  *code = 2;
  if (j->kind != JOB_SPAWN || !j->keep_stdin) return "command %lld has no open stdin (a spawn with a 'k' field has)";
  *code = 1;
  if (!eof && (j->stdin_eof || j->in < 0)) return "the stdin of command %lld is closed";
  *code = 3;
  if (!eof && j->in_queued - j->in_written >= SV_STDIN_WINDOW)
    return "the stdin of command %lld is full: wait for the X of the earlier writes";
  return NULL;
}

long long stdin_target(const sv_request *req) {
  long long target = 0;
  return sv_field_number(req, SV_TAG_TARGET, &target) == 0 && target >= 1 ? target : 0;
}

void stdin_request(const sv_request *req, int eof, long long target, job *j) {
  int code = 0;
  const sv_field *data = eof ? NULL : sv_field_find(req, SV_TAG_STDIN);
  if (!target) {
    refuse(req->id, 2, "no target: a 'w' field names the spawn (%lld)", target);
    return;
  }
  const char *problem = stdin_problem(j, eof, &code);
  if (problem) {
    refuse(req->id, code, problem, target);
    return;
  }
  if (!j || j->done || j->in < 0) { /* eof of a closed stdin */
    frame_exit(req->id, 0, "-", 0);
    return;
  }
  stdin_wait *w = calloc(1, sizeof *w);
  if (!w || (data && stdin_queue(j, data->data, data->len) != 0)) {
    free(w);
    refuse(req->id, 3, "out of memory for the stdin of command %lld", target);
    return;
  }
  *w = (stdin_wait){req->id, j->in_queued, eof, NULL};
  stdin_wait **tail = &j->waits;
  while (*tail) tail = &(*tail)->next;
  *tail = w;
  j->stdin_eof |= eof;
  stdin_feed(j);
}

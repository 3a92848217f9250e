/* frames: the host-facing output of the supervisor (see frames.h). */
#include "frames.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "watch.h"

int write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

ssize_t read_some(int fd, void *data, size_t n) {
  ssize_t k;
  do k = read(fd, data, n);
  while (k < 0 && errno == EINTR);
  return k;
}

/* The host is gone when stdout fails: nothing left to serve. */
static void out(const void *data, size_t n) {
  if (write_all(1, data, n) != 0) _exit(0);
}

void frame_ready(void) { out("R " SV_VERSION "\n", sizeof "R " SV_VERSION "\n" - 1); }

void frame_data(char kind, long long id, const void *data, size_t n) {
  char head[64];
  int len = snprintf(head, sizeof head, "%c %lld %zu\n", kind, id, n);
  out(head, (size_t)len);
  if (n) out(data, n);
}

void frame_failure(long long id, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n >= sizeof text) n = sizeof text - 1;
  frame_data('F', id, text, (size_t)n);
}

void frame_exit_marked(long long id, int code, const char *flags, long killed, long long mark) {
  char line[128];
  int n = mark >= 0 ? snprintf(line, sizeof line, "X %lld %d %s %ld %lld\n", id, code, *flags ? flags : "-", killed, mark)
                    : snprintf(line, sizeof line, "X %lld %d %s %ld\n", id, code, *flags ? flags : "-", killed);
  out(line, (size_t)n);
}

void frame_exit(long long id, int code, const char *flags, long killed) {
  frame_exit_marked(id, code, flags, killed, watch_generation());
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

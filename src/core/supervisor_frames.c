/* supervisor_frames: parser of the supervisor's frames (see supervisor_frames.h). */
#include "supervisor_frames.h"

#include <stdio.h>
#include <string.h>

void sv_frames_init(sv_frame_parser *p) { memset(p, 0, sizeof *p); }

void sv_frames_free(sv_frame_parser *p) {
  buf_free(&p->line);
  buf_free(&p->failure);
}

static int header_line(sv_frame_parser *p, const sv_frame_events *ev, void *ctx) {
  const char *s = p->line.data;
  char kind = s[0];
  long long id = 0;
  unsigned long long n = 0;
  sv_exit x = {.mark = -1};
  char flags[16] = "-";
  if (kind == 'R' && s[1] == ' ') {
    ev->ready(ctx, s + 2);
  } else if ((kind == 'O' || kind == 'E' || kind == 'F') && sscanf(s + 1, " %lld %llu", &id, &n) == 2) {
    p->kind = kind;
    p->id = id;
    p->remaining = (size_t)n;
    buf_clear(&p->failure);
  } else if (kind == 'X' && sscanf(s + 1, " %lld %d %15s %ld %lld", &id, &x.code, flags, &x.killed, &x.mark) >= 2) {
    if (x.mark < 0) x.mark = -1;
    snprintf(x.flags, sizeof x.flags, "%s", strcmp(flags, "-") == 0 ? "" : flags);
    x.timed_out = strchr(x.flags, 't') != NULL;
    x.oom = strchr(x.flags, 'o') != NULL;
    ev->exited(ctx, id, &x);
  } else {
    return -1;
  }
  return 0;
}

static void payload_done(sv_frame_parser *p, const sv_frame_events *ev, void *ctx) {
  if (p->kind == 'F') ev->failed(ctx, p->id, p->failure.data ? p->failure.data : "", p->failure.len);
  p->kind = 0;
}

int sv_frames_feed(sv_frame_parser *p, const char *data, size_t n, const sv_frame_events *ev, void *ctx) {
  while (n > 0) {
    if (p->kind) {
      size_t take = p->remaining < n ? p->remaining : n;
      if (p->kind == 'F')
        buf_append(&p->failure, data, take);
      else if (take)
        ev->output(ctx, p->id, p->kind == 'O' ? 1 : 2, data, take);
      p->remaining -= take, data += take, n -= take;
      if (p->remaining == 0) payload_done(p, ev, ctx);
      continue;
    }
    const char *nl = memchr(data, '\n', n);
    size_t take = nl ? (size_t)(nl - data) : n;
    buf_append(&p->line, data, take);
    data += take, n -= take;
    if (!nl) break;
    data++, n--;
    if (p->line.len > 0 && header_line(p, ev, ctx) != 0) return -1;
    buf_clear(&p->line);
    if (p->kind && p->remaining == 0) payload_done(p, ev, ctx);
  }
  return 0;
}

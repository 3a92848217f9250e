/* sse: incremental event-stream parser (see sse.h). */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

void sse_init(sse_parser *p) {
  memset(p, 0, sizeof *p);
  p->retry = -1;
}

void sse_free(sse_parser *p) {
  buf_free(&p->line);
  buf_free(&p->data);
  buf_free(&p->event);
  buf_free(&p->id);
}

int sse_pending(const sse_parser *p) { return p->line.len > 0 || p->has_data || p->event.len > 0; }

static int dispatch(sse_parser *p, sse_emit_fn emit, void *ctx) {
  int rc = 0;
  if (p->has_data) {
    sse_event ev = {p->event.len ? p->event.data : "message", p->event.len ? p->event.len : 7,
                    p->data.data ? p->data.data : "", p->data.len,
                    p->id.data ? p->id.data : "", p->id.len, p->retry};
    /* the data buffer holds a trailing \n after every line; drop the last one */
    if (ev.data_len > 0) ev.data_len--;
    rc = emit(ctx, &ev);
  }
  buf_clear(&p->data);
  buf_clear(&p->event);
  p->has_data = 0;
  return rc;
}

static void field(sse_parser *p, const char *line, size_t len) {
  const char *colon = memchr(line, ':', len);
  size_t name_len = colon ? (size_t)(colon - line) : len;
  const char *value = colon ? colon + 1 : line + len;
  size_t value_len = (size_t)(line + len - value);
  if (value_len > 0 && value[0] == ' ') value++, value_len--;
  if (name_len == 4 && memcmp(line, "data", 4) == 0) {
    buf_append(&p->data, value, value_len);
    buf_append_char(&p->data, '\n');
    p->has_data = 1;
  } else if (name_len == 5 && memcmp(line, "event", 5) == 0) {
    buf_clear(&p->event);
    buf_append(&p->event, value, value_len);
  } else if (name_len == 2 && memcmp(line, "id", 2) == 0) {
    if (!memchr(value, '\0', value_len)) {
      buf_clear(&p->id);
      buf_append(&p->id, value, value_len);
    }
  } else if (name_len == 5 && memcmp(line, "retry", 5) == 0) {
    long ms = 0;
    size_t i = 0;
    for (; i < value_len && value[i] >= '0' && value[i] <= '9'; i++) ms = ms * 10 + (value[i] - '0');
    if (i == value_len && value_len > 0) p->retry = ms;
  }
  /* other field names, and comments (empty name), are ignored */
}

static int end_of_line(sse_parser *p, sse_emit_fn emit, void *ctx) {
  int rc = 0;
  if (p->line.len == 0)
    rc = dispatch(p, emit, ctx);
  else if (p->line.data[0] != ':')
    field(p, p->line.data, p->line.len);
  buf_clear(&p->line);
  return rc;
}

int sse_feed(sse_parser *p, const char *bytes, size_t n, sse_emit_fn emit, void *ctx) {
  size_t i = 0;
  if (!p->started) {
    /* skip a UTF-8 byte-order mark, which may itself arrive in pieces */
    static const char bom[] = "\xEF\xBB\xBF";
    while (i < n && p->line.len < 3 && (unsigned char)bytes[i] == (unsigned char)bom[p->line.len]) {
      buf_append_char(&p->line, bytes[i]);
      i++;
    }
    if (p->line.len == 3) {
      buf_clear(&p->line);
      p->started = 1;
    } else if (i < n || p->line.len == 0) {
      p->started = 1; /* not a BOM after all: keep what we took as line text */
    }
  }
  while (i < n) {
    char c = bytes[i];
    if (p->after_cr) {
      p->after_cr = 0;
      if (c == '\n') {
        i++;
        continue;
      }
    }
    if (c == '\r' || c == '\n') {
      p->after_cr = c == '\r';
      i++;
      int rc = end_of_line(p, emit, ctx);
      if (rc) return rc;
      continue;
    }
    /* copy the run of ordinary bytes in one go */
    size_t start = i;
    while (i < n && bytes[i] != '\r' && bytes[i] != '\n') i++;
    buf_append(&p->line, bytes + start, i - start);
  }
  return 0;
}

/* capped: one output stream with a byte cap (capped.h). */
#include "capped.h"

#include <stdlib.h>
#include <string.h>


void capped_init(capped_output *c, size_t cap) {
  memset(c, 0, sizeof *c);
  c->head_cap = cap - cap / 2;
  c->tail_cap = cap / 2;
}

static void ring_write(capped_output *c, const char *data, size_t n) {
  if (c->tail_cap == 0) return;
  if (n >= c->tail_cap) { /* only the last tail_cap bytes can survive */
    memcpy(c->tail, data + n - c->tail_cap, c->tail_cap);
    c->tail_start = 0;
    c->tail_len = c->tail_cap;
    return;
  }
  size_t end = (c->tail_start + c->tail_len) % c->tail_cap;
  for (size_t i = 0; i < n; i++) {
    c->tail[end] = data[i];
    end = (end + 1) % c->tail_cap;
    if (c->tail_len < c->tail_cap)
      c->tail_len++;
    else
      c->tail_start = (c->tail_start + 1) % c->tail_cap;
  }
}

int capped_write(capped_output *c, const char *data, size_t n) {
  c->total += n;
  size_t to_head = c->head.len < c->head_cap ? c->head_cap - c->head.len : 0;
  if (to_head > n) to_head = n;
  if (to_head && buf_append(&c->head, data, to_head) != 0) return -1;
  if (n > to_head) {
    if (!c->tail && c->tail_cap) {
      c->tail = malloc(c->tail_cap);
      if (!c->tail) return -1;
    }
    ring_write(c, data + to_head, n - to_head);
  }
  return 0;
}

int capped_result(const capped_output *c, buf *out) {
  buf_append(out, c->head.data ? c->head.data : "", c->head.len);
  unsigned long long kept = c->head.len + c->tail_len;
  int truncated = c->total > kept;
  if (truncated)
    buf_printf(out, "\n[... %llu bytes omitted by luagent: output over %zu bytes; first and last parts kept ...]\n",
               c->total - kept, c->head_cap + c->tail_cap);
  size_t first = c->tail_len;
  if (c->tail_start + first > c->tail_cap) first = c->tail_cap - c->tail_start;
  if (c->tail_len) {
    buf_append(out, c->tail + c->tail_start, first);
    buf_append(out, c->tail, c->tail_len - first);
  }
  return truncated;
}

void capped_free(capped_output *c) {
  buf_free(&c->head);
  free(c->tail);
  c->tail = NULL;
}


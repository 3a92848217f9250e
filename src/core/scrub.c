/* scrub: streaming replacement of a few needles (scrub.h).
 *
 * The bytes not yet passed on are `held` (the tail of earlier pieces that
 * could still begin a needle) followed by the new piece. A position is passed
 * on once no needle can start there: a whole needle there is replaced, a
 * needle's prefix running to the end of what is held keeps it (and everything
 * after it) for the next piece. first[c] says whether any needle starts with
 * byte c, so most positions cost one table look-up. */
#include "scrub.h"

#include <stdlib.h>
#include <string.h>

typedef struct needle {
  char *text, *replacement;
  size_t n, rn;
} needle;

struct scrub {
  needle *needles;
  size_t count;
  unsigned char first[256];
  buf held;
  size_t replaced;
};

scrub *scrub_new(void) { return calloc(1, sizeof(scrub)); }

int scrub_add(scrub *s, const char *text, size_t n, const char *replacement, size_t rn) {
  if (n == 0 || n > SCRUB_NEEDLE_MAX) return -1;
  needle *grown = realloc(s->needles, (s->count + 1) * sizeof *grown);
  if (!grown) return -1;
  s->needles = grown;
  needle *d = &s->needles[s->count];
  d->text = malloc(n);
  d->replacement = malloc(rn ? rn : 1);
  if (!d->text || !d->replacement) {
    free(d->text);
    free(d->replacement);
    return -1;
  }
  memcpy(d->text, text, n);
  if (rn) memcpy(d->replacement, replacement, rn);
  d->n = n, d->rn = rn;
  s->first[(unsigned char)text[0]] = 1;
  /* longest first: a longer needle that may be there wins over a shorter one that is */
  for (size_t i = s->count; i > 0 && s->needles[i - 1].n < n; i--) {
    needle t = s->needles[i];
    s->needles[i] = s->needles[i - 1];
    s->needles[i - 1] = t;
  }
  s->count++;
  return 0;
}

/* At p (avail bytes), the needles longest first: 1 with *whole the first
 * found whole, or 1 with *whole NULL when a longer one is cut by the end of
 * what is held (the next piece decides), else 0. */
static int match_at(const scrub *s, const char *p, size_t avail, const needle **whole) {
  *whole = NULL;
  for (size_t i = 0; i < s->count; i++) {
    const needle *d = &s->needles[i];
    if (avail < d->n) {
      if (memcmp(p, d->text, avail) == 0) return 1;
    } else if (memcmp(p, d->text, d->n) == 0) {
      *whole = d;
      return 1;
    }
  }
  return 0;
}

/* Passes on what can be passed of data[0..n); returns how many bytes to hold. */
static size_t scan(scrub *s, const char *data, size_t n, buf *out) {
  size_t from = 0, i = 0;
  while (i < n) {
    if (!s->first[(unsigned char)data[i]]) {
      i++;
      continue;
    }
    const needle *whole;
    if (!match_at(s, data + i, n - i, &whole)) {
      i++;
      continue;
    }
    buf_append(out, data + from, i - from);
    if (!whole) return n - i; /* a needle may go on in the next piece */
    buf_append(out, whole->replacement, whole->rn);
    s->replaced++;
    i += whole->n;
    from = i;
  }
  buf_append(out, data + from, n - from);
  return 0;
}

void scrub_feed(scrub *s, const char *data, size_t n, buf *out) {
  if (s->count == 0) {
    buf_append(out, data, n);
    return;
  }
  if (s->held.len == 0) {
    size_t keep = scan(s, data, n, out);
    if (keep) buf_append(&s->held, data + n - keep, keep);
    return;
  }
  buf_append(&s->held, data, n);
  buf all = s->held;
  s->held = (buf)BUF_INIT;
  size_t keep = scan(s, all.data, all.len, out);
  if (keep) buf_append(&s->held, all.data + all.len - keep, keep);
  buf_free(&all);
}

void scrub_flush(scrub *s, buf *out) {
  buf_append(out, s->held.data ? s->held.data : "", s->held.len);
  buf_clear(&s->held);
}

size_t scrub_count(const scrub *s) { return s->replaced; }

int scrub_empty(const scrub *s) { return s->count == 0; }

void scrub_free(scrub *s) {
  if (!s) return;
  for (size_t i = 0; i < s->count; i++) {
    free(s->needles[i].text);
    free(s->needles[i].replacement);
  }
  free(s->needles);
  buf_free(&s->held);
  free(s);
}

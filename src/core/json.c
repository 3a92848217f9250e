/* json: scanning and writing helpers (see json.h). */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer literal longer than this many digits may exceed 2^53. */
#define SAFE_INT_DIGITS 15

static size_t skip_string(const char *s, size_t len, size_t i) {
  /* s[i] is the opening quote */
  for (i++; i < len; i++) {
    if (s[i] == '\\')
      i++;
    else if (s[i] == '"')
      return i + 1;
  }
  return len;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* At a number token: its length, and whether it is a long integer literal. */
static size_t number_token(const char *s, size_t len, size_t i, int *big) {
  size_t start = i, digits = 0;
  int integral = 1;
  if (i < len && s[i] == '-') i++;
  while (i < len) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      digits++;
    } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
      integral = 0;
    } else {
      break;
    }
    i++;
  }
  *big = integral && digits > SAFE_INT_DIGITS;
  return i - start;
}

/* Walks the text; calls on_mark(kind, pos, toklen) for each spot to rewrite
 * (kind 'a' empty array, 'i' long integer). */
typedef void (*mark_fn)(void *ctx, char kind, size_t pos, size_t toklen);

static void walk_marks(const char *s, size_t len, mark_fn on_mark, void *ctx) {
  size_t i = 0;
  while (i < len) {
    char c = s[i];
    if (c == '"') {
      i = skip_string(s, len, i);
    } else if (c == '[') {
      size_t j = i + 1;
      while (j < len && is_ws(s[j])) j++;
      if (j < len && s[j] == ']') {
        on_mark(ctx, 'a', i, j + 1 - i);
        i = j + 1;
      } else {
        i++;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      int big;
      size_t n = number_token(s, len, i, &big);
      if (big) on_mark(ctx, 'i', i, n);
      i += n;
    } else {
      i++;
    }
  }
}

static void count_mark(void *ctx, char kind, size_t pos, size_t toklen) {
  (void)pos, (void)toklen;
  json_scan_result *r = ctx;
  if (kind == 'a')
    r->empty_arrays++;
  else
    r->big_ints++;
}

void json_scan(const char *text, size_t len, json_scan_result *out) {
  out->empty_arrays = out->big_ints = 0;
  walk_marks(text, len, count_mark, out);
}

typedef struct rewriter {
  const char *text;
  size_t copied;
  buf *out;
  int failed;
} rewriter;

static void rewrite_mark(void *ctx, char kind, size_t pos, size_t toklen) {
  rewriter *rw = ctx;
  rw->failed |= buf_append(rw->out, rw->text + rw->copied, pos - rw->copied);
  if (kind == 'a') {
    rw->failed |= buf_append_str(rw->out, "[\"" JSON_EMPTY_ARRAY_MARK "\"]");
  } else {
    rw->failed |= buf_append_str(rw->out, "\"" JSON_BIG_INT_MARK);
    rw->failed |= buf_append(rw->out, rw->text + pos, toklen);
    rw->failed |= buf_append_char(rw->out, '"');
  }
  rw->copied = pos + toklen;
}

int json_rewrite(const char *text, size_t len, buf *out) {
  rewriter rw = {text, 0, out, 0};
  walk_marks(text, len, rewrite_mark, &rw);
  rw.failed |= buf_append(out, text + rw.copied, len - rw.copied);
  return rw.failed ? -1 : 0;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if invalid. */
static size_t utf8_sequence(const unsigned char *s, size_t len) {
  unsigned char c = s[0];
  size_t n;
  unsigned min;
  unsigned cp;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07, min = 0x10000;
  else return 0;
  if (len < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

int json_write_string(buf *out, const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  if (buf_reserve(out, len + 2) != 0) return -1;
  int rc = buf_append_char(out, '"');
  size_t i = 0;
  while (i < len && rc == 0) {
    /* copy the run of bytes that need no escaping */
    size_t start = i;
    while (i < len && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\') i++;
    if (i > start) rc |= buf_append(out, s + start, i - start);
    if (i >= len) break;
    unsigned char c = p[i];
    if (c >= 0x80) {
      size_t n = utf8_sequence(p + i, len - i);
      if (n) {
        rc |= buf_append(out, s + i, n);
        i += n;
      } else {
        rc |= buf_append_str(out, "\xEF\xBF\xBD"); /* U+FFFD */
        i++;
      }
      continue;
    }
    switch (c) {
      case '"': rc |= buf_append_str(out, "\\\""); break;
      case '\\': rc |= buf_append_str(out, "\\\\"); break;
      case '\n': rc |= buf_append_str(out, "\\n"); break;
      case '\r': rc |= buf_append_str(out, "\\r"); break;
      case '\t': rc |= buf_append_str(out, "\\t"); break;
      case '\b': rc |= buf_append_str(out, "\\b"); break;
      case '\f': rc |= buf_append_str(out, "\\f"); break;
      default: {
        char esc[7] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15], 0};
        rc |= buf_append(out, esc, 6);
      }
    }
    i++;
  }
  return rc | buf_append_char(out, '"');
}

int json_write_double(buf *out, double x) {
  if (isnan(x) || isinf(x)) return -1;
  char tmp[40];
  for (int precision = 15; precision <= 17; precision++) {
    snprintf(tmp, sizeof tmp, "%.*g", precision, x);
    if (strtod(tmp, NULL) == x) break;
  }
  return buf_append_str(out, tmp);
}

int json_write_integer(buf *out, long long v) { return buf_printf(out, "%lld", v); }

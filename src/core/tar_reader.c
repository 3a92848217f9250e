/* tar_reader: an incremental tar parser (ustar, GNU long names, PAX,
 * base-256 sizes); bytes may arrive cut anywhere (see tar.h). */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tar.h"
#include "tar_internal.h"

/* Reads an octal field, which may be padded with spaces and NULs. */
static int parse_octal(const unsigned char *f, size_t w, long long *out) {
  size_t start = 0, end = w;
  while (start < end && (f[start] == ' ' || f[start] == '\0')) start++;
  while (end > start && (f[end - 1] == ' ' || f[end - 1] == '\0')) end--;
  long long v = 0;
  for (size_t i = start; i < end; i++) {
    if (f[i] < '0' || f[i] > '7' || v > (LLONG_MAX >> 3)) return -1;
    v = v * 8 + (f[i] - '0');
  }
  *out = v;
  return 0;
}

/* Reads a base-256 field (first byte 0x80 positive, 0xff negative). */
static int parse_base256(const unsigned char *f, size_t w, long long *out) {
  unsigned char inv = (f[0] & 0x40) ? 0xff : 0;
  unsigned long long x = 0;
  for (size_t i = 0; i < w; i++) {
    unsigned char c = f[i] ^ inv;
    if (i == 0) c &= 0x7f;
    if (x >> 55) return -1;
    x = x << 8 | c;
  }
  if (x >> 63) return -1;
  *out = inv ? ~(long long)x : (long long)x;
  return 0;
}

static int parse_number(const unsigned char *f, size_t w, long long *out) {
  return (f[0] & 0x80) ? parse_base256(f, w, out) : parse_octal(f, w, out);
}

enum { R_HEADER, R_DATA, R_PAD, R_END, R_FAILED };
enum { SINK_DELIVER, SINK_SKIP, SINK_META };
enum { FROM_NONE, FROM_GNU, FROM_PAX }; /* where a long name came from; PAX wins */

struct tar_reader {
  tar_reader_callbacks cb;
  void *ctx;
  int state;
  int sink;
  unsigned char block[BLOCK];
  size_t fill;          /* bytes of block collected */
  long long remaining;  /* data bytes left in the current entry */
  long long pad;        /* padding bytes left after it */
  int owes_end;         /* on_entry_end is due when the data ends */
  int zero_blocks;      /* consecutive zero blocks seen */
  long long entries;    /* entries reported to on_entry */
  char meta_type;       /* 'x', 'L' or 'K' while collecting meta */
  buf meta;
  /* overrides for the next entry, from PAX 'x' and GNU 'L'/'K' headers */
  int pending_meta;
  buf long_name, long_link;
  int name_from, link_from;
  int has_pax_size, has_pax_mtime;
  long long pax_size, pax_mtime;
  buf name, link;       /* the current entry's */
  char err[512];
};

tar_reader *tar_reader_new(const tar_reader_callbacks *cb, void *ctx) {
  tar_reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->cb = *cb;
  r->ctx = ctx;
  return r;
}

static int reader_fail(tar_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int reader_fail(tar_reader *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, sizeof r->err, fmt, ap);
  va_end(ap);
  r->state = R_FAILED;
  return -1;
}

static void clear_overrides(tar_reader *r) {
  r->pending_meta = 0;
  r->name_from = r->link_from = FROM_NONE;
  r->has_pax_size = r->has_pax_mtime = 0;
}

/* Sets a long name or link from `from` unless a stronger source set it. */
static int set_override(buf *b, int *have, int from, const char *s, size_t len) {
  if (*have > from) return 0;
  *have = from;
  buf_clear(b);
  return buf_append(b, s, len);
}

/* Reads a decimal PAX value; mtime may carry a sign and a fraction. */
static int parse_decimal(const char *s, size_t len, int allow_sign_fraction, long long *out) {
  size_t i = 0;
  int neg = allow_sign_fraction && len > 0 && s[0] == '-';
  long long v = 0;
  i += (size_t)neg;
  if (i == len) return -1;
  for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (LLONG_MAX - 9) / 10) return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (i < len && !(allow_sign_fraction && s[i] == '.')) return -1;
  *out = neg ? -v : v;
  return 0;
}

static int key_is(const char *key, size_t klen, const char *want) {
  return klen == strlen(want) && memcmp(key, want, klen) == 0;
}

static int apply_pax_record(tar_reader *r, const char *key, size_t klen, const char *val, size_t vlen) {
  int has_nul = memchr(val, '\0', vlen) != NULL;
  if (key_is(key, klen, "path"))
    return has_nul ? -1 : set_override(&r->long_name, &r->name_from, FROM_PAX, val, vlen);
  if (key_is(key, klen, "linkpath"))
    return has_nul ? -1 : set_override(&r->long_link, &r->link_from, FROM_PAX, val, vlen);
  if (key_is(key, klen, "size")) {
    r->has_pax_size = 1;
    return parse_decimal(val, vlen, 0, &r->pax_size);
  }
  if (key_is(key, klen, "mtime")) {
    r->has_pax_mtime = 1;
    return parse_decimal(val, vlen, 1, &r->pax_mtime);
  }
  return 0; /* other keys (uid, uname, atime, ...) are not needed */
}

/* Parses PAX records "LEN key=value\n" from r->meta. */
static int parse_pax(tar_reader *r) {
  const char *p = r->meta.data ? r->meta.data : "", *end = p + r->meta.len;
  while (p < end && *p != '\0') {
    const char *q = p;
    size_t len = 0;
    while (q < end && *q >= '0' && *q <= '9' && len <= r->meta.len) len = len * 10 + (size_t)(*q++ - '0');
    if (q == p || q == end || *q != ' ') return -1;
    if (len > (size_t)(end - p) || len < (size_t)(q - p) + 3) return -1;
    const char *rec_end = p + len, *key = q + 1;
    const char *eq = memchr(key, '=', (size_t)(rec_end - 1 - key));
    if (rec_end[-1] != '\n' || !eq) return -1;
    const char *value = eq + 1;
    if (apply_pax_record(r, key, (size_t)(eq - key), value, (size_t)(rec_end - 1 - value)) != 0) return -1;
    p = rec_end;
  }
  return 0;
}

static int apply_meta(tar_reader *r) {
  const char *s = r->meta.data ? r->meta.data : "";
  size_t len = strnlen(s, r->meta.len); /* GNU names end with a NUL */
  int rc = 0;
  if (r->meta_type == 'L') rc = set_override(&r->long_name, &r->name_from, FROM_GNU, s, len);
  if (r->meta_type == 'K') rc = set_override(&r->long_link, &r->link_from, FROM_GNU, s, len);
  if (r->meta_type == 'x' && parse_pax(r) != 0)
    return reader_fail(r, "bad PAX record at entry %lld", r->entries + 1);
  if (rc != 0) return reader_fail(r, "out of memory");
  return 0;
}

/* The current entry's data (or meta record) has all arrived. */
static int end_data(tar_reader *r) {
  r->state = r->pad ? R_PAD : R_HEADER;
  if (r->sink == SINK_META) return apply_meta(r);
  if (!r->owes_end) return 0;
  r->owes_end = 0;
  if (r->cb.on_entry_end && r->cb.on_entry_end(r->ctx) != 0)
    return reader_fail(r, "stopped by on_entry_end at entry %lld", r->entries);
  return 0;
}

static int begin_data(tar_reader *r, long long size, int sink) {
  r->sink = sink;
  r->remaining = size;
  r->pad = tar_padding_of(size);
  r->state = R_DATA;
  return size == 0 ? end_data(r) : 0;
}

static int begin_meta(tar_reader *r, char type, long long size) {
  if (size > META_MAX) return reader_fail(r, "metadata header too large at entry %lld", r->entries + 1);
  r->meta_type = type;
  r->pending_meta = 1;
  buf_clear(&r->meta);
  return begin_data(r, size, SINK_META);
}

static size_t field_len(const unsigned char *f, size_t width) { return strnlen((const char *)f, width); }

/* Fills r->name and r->link for the header in r->block. */
static int entry_names(tar_reader *r) {
  const unsigned char *h = r->block;
  int posix = memcmp(h + H_MAGIC, "ustar\0", 6) == 0;
  int rc = 0;
  buf_clear(&r->name);
  buf_clear(&r->link);
  if (r->name_from != FROM_NONE) {
    rc |= buf_append(&r->name, r->long_name.data ? r->long_name.data : "", r->long_name.len);
  } else {
    if (posix && h[H_PREFIX]) {
      rc |= buf_append(&r->name, h + H_PREFIX, field_len(h + H_PREFIX, PREFIX_LEN));
      rc |= buf_append_char(&r->name, '/');
    }
    rc |= buf_append(&r->name, h + H_NAME, field_len(h + H_NAME, NAME_LEN));
  }
  if (r->link_from != FROM_NONE)
    rc |= buf_append(&r->link, r->long_link.data ? r->long_link.data : "", r->long_link.len);
  else
    rc |= buf_append(&r->link, h + H_LINK, field_len(h + H_LINK, NAME_LEN));
  return rc ? reader_fail(r, "out of memory") : 0;
}

static char normal_type(char type, const char *name) {
  size_t len = strlen(name);
  if (type == '\0' && len > 0 && name[len - 1] == '/') return '5'; /* old tars mark dirs by a slash */
  return type == '\0' || type == '7' ? '0' : type;
}

static int header_only(char type) { return type >= '1' && type <= '6'; }

static int begin_entry(tar_reader *r, char raw_type, long long size) {
  long long mode = 0, mtime = 0;
  if (entry_names(r) != 0) return -1;
  if (parse_number(r->block + H_MODE, 8, &mode) != 0 ||
      parse_number(r->block + H_MTIME, 12, &mtime) != 0)
    return reader_fail(r, "bad number in header at entry %lld", r->entries + 1);
  tar_entry_info e = {r->name.data, r->link.data, normal_type(raw_type, r->name.data), (unsigned)mode,
                      size, mtime};
  if (r->has_pax_size) e.size = r->pax_size;
  if (r->has_pax_mtime) e.mtime = r->pax_mtime;
  if (header_only(e.type)) e.size = 0;
  clear_overrides(r);
  r->entries++;
  int rc = r->cb.on_entry ? r->cb.on_entry(r->ctx, &e) : 1;
  if (rc < 0) return reader_fail(r, "stopped by on_entry at entry %lld", r->entries);
  r->owes_end = 1;
  return begin_data(r, e.size, rc == 0 && r->cb.on_data ? SINK_DELIVER : SINK_SKIP);
}

static int is_zero_block(const unsigned char *h) { return memcmp(h, tar_zero_block, BLOCK) == 0; }

static int checksum_ok(const unsigned char *h) {
  long long stored;
  long ssum;
  if (parse_octal(h + H_CHKSUM, 8, &stored) != 0) return 0;
  unsigned long sum = tar_header_sum(h, &ssum);
  return stored == (long long)sum || stored == ssum;
}

static int process_header(tar_reader *r) {
  const unsigned char *h = r->block;
  if (is_zero_block(h)) {
    if (++r->zero_blocks == 2) r->state = R_END;
    return 0;
  }
  r->zero_blocks = 0;
  if (!checksum_ok(h)) return reader_fail(r, "bad header checksum at entry %lld", r->entries + 1);
  long long size;
  if (parse_number(h + H_SIZE, 12, &size) != 0 || size < 0)
    return reader_fail(r, "bad size in header at entry %lld", r->entries + 1);
  char type = (char)h[H_TYPE];
  if (type == 'x' || type == 'L' || type == 'K') return begin_meta(r, type, size);
  if (type == 'g') return begin_data(r, size, SINK_SKIP); /* global PAX: ignored */
  return begin_entry(r, type, size);
}

static size_t take_header(tar_reader *r, const char *data, size_t n) {
  size_t k = n < BLOCK - r->fill ? n : BLOCK - r->fill;
  memcpy(r->block + r->fill, data, k);
  r->fill += k;
  if (r->fill == BLOCK) {
    r->fill = 0;
    process_header(r);
  }
  return k;
}

static size_t take_data(tar_reader *r, const char *data, size_t n) {
  size_t k = tar_min_size(n, r->remaining);
  r->remaining -= (long long)k;
  if (r->sink == SINK_DELIVER && r->cb.on_data(r->ctx, data, k) != 0) {
    reader_fail(r, "stopped by on_data at entry %lld", r->entries);
    return k;
  }
  if (r->sink == SINK_META && buf_append(&r->meta, data, k) != 0) {
    reader_fail(r, "out of memory");
    return k;
  }
  if (r->remaining == 0) end_data(r);
  return k;
}

static size_t take_padding(tar_reader *r, size_t n) {
  size_t k = tar_min_size(n, r->pad);
  r->pad -= (long long)k;
  if (r->pad == 0) r->state = R_HEADER;
  return k;
}

int tar_reader_feed(tar_reader *r, const char *data, size_t n) {
  while (n > 0 && r->state != R_FAILED && r->state != R_END) {
    size_t k;
    if (r->state == R_HEADER)
      k = take_header(r, data, n);
    else if (r->state == R_DATA)
      k = take_data(r, data, n);
    else
      k = take_padding(r, n);
    data += k;
    n -= k;
  }
  return r->state == R_FAILED ? -1 : 0;
}

int tar_reader_finish(tar_reader *r) {
  if (r->state == R_FAILED) return -1;
  if (r->state == R_END) return 0;
  if (r->state == R_HEADER && r->fill == 0 && !r->pending_meta) return 0;
  if (r->state == R_HEADER || r->sink == SINK_META)
    return reader_fail(r, "truncated tar stream: it ends inside a header (entry %lld)", r->entries + 1);
  return reader_fail(r, "truncated tar stream: it ends inside the data of entry %lld ('%s')", r->entries,
                     r->name.data ? r->name.data : "");
}

const char *tar_reader_error(const tar_reader *r) { return r->err; }

void tar_reader_free(tar_reader *r) {
  if (!r) return;
  buf_free(&r->meta);
  buf_free(&r->long_name);
  buf_free(&r->long_link);
  buf_free(&r->name);
  buf_free(&r->link);
  free(r);
}

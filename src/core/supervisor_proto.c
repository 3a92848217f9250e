/* supervisor_proto: encoder and parser of the supervisor's requests (see
 * supervisor_proto.h). The parser trusts nothing: every length is checked
 * against the limits before it is used, numbers are plain decimals without
 * signs, spaces or leading zeros, and a cut request is "incomplete", never
 * read past its end. */
#include "supervisor_proto.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ID 9223372036854775807LL

static int valid_op(const char *op) {
  size_t n = strlen(op);
  if (n == 0 || n >= sizeof ((sv_request *)0)->op) return 0;
  for (size_t i = 0; i < n; i++)
    if (op[i] < 'a' || op[i] > 'z') return 0;
  return 1;
}

int sv_encode(buf *out, const char *op, long long id, const sv_field *fields, size_t nfields) {
  if (!valid_op(op) || id < 1 || nfields > SV_MAX_FIELDS) return -1;
  size_t total = 0;
  for (size_t i = 0; i < nfields; i++) {
    if (fields[i].len >= SV_MAX_FIELD || (fields[i].len && !fields[i].data)) return -1;
    total += fields[i].len + 1;
  }
  if (total > SV_MAX_REQUEST) return -1;
  size_t start = out->len;
  int rc = buf_printf(out, "%s %lld %zu\n", op, id, nfields);
  for (size_t i = 0; rc == 0 && i < nfields; i++) {
    rc = buf_printf(out, "%zu:%c", fields[i].len + 1, fields[i].tag);
    if (rc == 0) rc = buf_append(out, fields[i].data, fields[i].len);
    if (rc == 0) rc = buf_append_char(out, ',');
  }
  if (rc != 0) {
    out->len = start;
    if (out->data) out->data[start] = '\0';
  }
  return rc;
}

/* ---- field lists for the common requests ---- */

typedef struct field_list {
  sv_field *items;
  size_t n, cap;
  int failed;
  char numbers[4][24]; /* room for the decimal fields */
  int nnumbers;
} field_list;

static void add(field_list *l, char tag, const char *data, size_t len) {
  if (l->failed) return;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    sv_field *items = cap <= SV_MAX_FIELDS * 2 ? realloc(l->items, cap * sizeof *items) : NULL;
    if (!items) {
      l->failed = 1;
      return;
    }
    l->items = items, l->cap = cap;
  }
  l->items[l->n++] = (sv_field){tag, data, len};
}

static void add_str(field_list *l, char tag, const char *s) { add(l, tag, s, strlen(s)); }

static void add_number(field_list *l, char tag, long long value) {
  if (l->nnumbers == 4) {
    l->failed = 1;
    return;
  }
  char *text = l->numbers[l->nnumbers++];
  snprintf(text, sizeof l->numbers[0], "%lld", value);
  add_str(l, tag, text);
}

static int finish(buf *out, const char *op, long long id, field_list *l) {
  int rc = l->failed ? -1 : sv_encode(out, op, id, l->items, l->n);
  free(l->items);
  return rc;
}

int sv_encode_run(buf *out, long long id, enum sv_run_mode mode, const char *const *argv, const char *const *env,
                  const char *cwd, const char *stdin_data, size_t stdin_len, long long timeout_ms) {
  if (!argv || !argv[0] || timeout_ms < 0 || (mode != SV_RUN && mode != SV_SPAWN && mode != SV_SPAWN_STDIN))
    return -1;
  field_list l = {0};
  for (size_t i = 0; argv[i]; i++) add_str(&l, SV_TAG_ARG, argv[i]);
  for (size_t i = 0; env && env[i]; i++) {
    if (!strchr(env[i], '=') || env[i][0] == '=') l.failed = 1;
    add_str(&l, SV_TAG_ENV, env[i]);
  }
  if (cwd) add_str(&l, SV_TAG_CWD, cwd);
  if (stdin_data) add(&l, SV_TAG_STDIN, stdin_data, stdin_len);
  if (mode == SV_SPAWN_STDIN) add(&l, SV_TAG_KEEPSTDIN, "", 0);
  if (timeout_ms > 0) add_number(&l, SV_TAG_TIMEOUT, timeout_ms);
  return finish(out, mode == SV_RUN ? "run" : "spawn", id, &l);
}

int sv_encode_write(buf *out, long long id, long long target, const char *data, size_t len) {
  if (target < 1 || (len && !data)) return -1;
  field_list l = {0};
  add_number(&l, SV_TAG_TARGET, target);
  add(&l, SV_TAG_STDIN, data ? data : "", len);
  return finish(out, "write", id, &l);
}

int sv_encode_eof(buf *out, long long id, long long target) {
  if (target < 1) return -1;
  field_list l = {0};
  add_number(&l, SV_TAG_TARGET, target);
  return finish(out, "eof", id, &l);
}

int sv_encode_python(buf *out, long long id, const char *code, size_t len, long long timeout_ms) {
  if (timeout_ms < 0) return -1;
  field_list l = {0};
  add(&l, SV_TAG_CODE, code, len);
  if (timeout_ms > 0) add_number(&l, SV_TAG_TIMEOUT, timeout_ms);
  return finish(out, "python", id, &l);
}

int sv_encode_kill(buf *out, long long id) { return sv_encode(out, "kill", id, NULL, 0); }

int sv_encode_signal(buf *out, long long id, int signo) {
  if (signo < 1 || signo > 64) return -1;
  field_list l = {0};
  add_number(&l, SV_TAG_SIGNAL, signo);
  return finish(out, "signal", id, &l);
}

int sv_encode_pack(buf *out, long long id, const char *path, long long max_bytes, long long max_entries) {
  if (!path || !*path || max_bytes < 0 || max_entries < 0) return -1;
  field_list l = {0};
  add_str(&l, SV_TAG_PATH, path);
  add_number(&l, SV_TAG_MAXBYTES, max_bytes);
  add_number(&l, SV_TAG_MAXENTRIES, max_entries);
  return finish(out, "pack", id, &l);
}

/* ---- parsing ---- */

/* A decimal in s[0..n): digits only, no leading zero unless "0", <= max. */
static int parse_decimal(const char *s, size_t n, unsigned long long max, unsigned long long *value) {
  if (n == 0 || n > 20 || (n > 1 && s[0] == '0')) return -1;
  unsigned long long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (max - d) / 10) return -1;
    v = v * 10 + d;
  }
  *value = v;
  return 0;
}

/* The header line: op, id, count. 1 parsed, 0 incomplete, -1 bad. */
static int parse_header(const char *data, size_t n, sv_request *req, size_t *count, size_t *used,
                        const char **error) {
  const char *nl = memchr(data, '\n', n < SV_MAX_HEADER ? n : SV_MAX_HEADER);
  if (!nl) {
    if (n >= SV_MAX_HEADER) return *error = "request header line too long", -1;
    *used = n + 1;
    return 0;
  }
  const char *sp1 = memchr(data, ' ', (size_t)(nl - data));
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(nl - sp1 - 1)) : NULL;
  if (!sp2) return *error = "request header is not 'op id count'", -1;
  size_t oplen = (size_t)(sp1 - data);
  if (oplen == 0 || oplen >= sizeof req->op) return *error = "request op missing or too long", -1;
  memcpy(req->op, data, oplen);
  req->op[oplen] = '\0';
  if (!valid_op(req->op)) return *error = "request op is not a lower-case word", -1;
  unsigned long long id, c;
  if (parse_decimal(sp1 + 1, (size_t)(sp2 - sp1 - 1), MAX_ID, &id) != 0 || id == 0)
    return *error = "request id is not a decimal 1..2^63-1", -1;
  if (parse_decimal(sp2 + 1, (size_t)(nl - sp2 - 1), SV_MAX_FIELDS, &c) != 0)
    return *error = "request field count is not a decimal <= 4096", -1;
  req->id = (long long)id;
  *count = (size_t)c;
  *used = (size_t)(nl - data) + 1;
  return 1;
}

/* One netstring at data[pos..n). 1 parsed (*next after its ','), 0 incomplete
 * (*need bytes in all), -1 bad. */
static int parse_field(const char *data, size_t n, size_t pos, size_t total, sv_field *f, size_t *next,
                       size_t *need, const char **error) {
  size_t i = pos;
  while (i < n && i - pos < 10 && data[i] >= '0' && data[i] <= '9') i++;
  if (i == n) {
    if (i - pos < 10) return *need = n + 1, 0;
    return *error = "field length too long", -1;
  }
  if (data[i] != ':') return *error = "field length is not '<digits>:'", -1;
  unsigned long long len;
  if (parse_decimal(data + pos, i - pos, SV_MAX_FIELD, &len) != 0 || len == 0)
    return *error = "field length is not a decimal 1..64 MiB", -1;
  if (total + len > SV_MAX_REQUEST) return *error = "request larger than 130 MiB", -1;
  size_t end = i + 1 + (size_t)len; /* index of the ',' */
  if (end >= n) return *need = end + 1, 0;
  if (data[end] != ',') return *error = "field does not end with ','", -1;
  *f = (sv_field){data[i + 1], data + i + 2, (size_t)len - 1};
  *next = end + 1;
  return 1;
}

int sv_parse(const char *data, size_t n, sv_request *req, size_t *used, const char **error) {
  memset(req, 0, sizeof *req);
  size_t count, pos, total = 0;
  int rc = parse_header(data, n, req, &count, &pos, error);
  if (rc <= 0) {
    if (rc == 0) *used = pos;
    return rc;
  }
  sv_field *fields = count ? calloc(count, sizeof *fields) : NULL;
  if (count && !fields) return *error = "out of memory", -1;
  for (size_t k = 0; k < count; k++) {
    size_t next = 0, need = 0;
    rc = parse_field(data, n, pos, total, &fields[k], &next, &need, error);
    if (rc <= 0) {
      free(fields);
      if (rc == 0) *used = need;
      return rc;
    }
    total += next - pos;
    pos = next;
  }
  req->fields = fields;
  req->nfields = count;
  *used = pos;
  return 1;
}

void sv_request_free(sv_request *req) {
  free(req->fields);
  req->fields = NULL;
  req->nfields = 0;
}

const sv_field *sv_field_find(const sv_request *req, char tag) {
  for (size_t i = 0; i < req->nfields; i++)
    if (req->fields[i].tag == tag) return &req->fields[i];
  return NULL;
}

int sv_field_number(const sv_request *req, char tag, long long *value) {
  const sv_field *f = sv_field_find(req, tag);
  if (!f) return 1;
  unsigned long long v;
  if (parse_decimal(f->data, f->len, MAX_ID, &v) != 0) return -1;
  *value = (long long)v;
  return 0;
}

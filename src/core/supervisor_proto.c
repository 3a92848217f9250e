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

/* ---- the operations, from supervisor_ops.def ---- */

const sv_field_spec SV_FIELDS[] = {
#define SV_FIELD(name, tag, kind) {#name, tag, kind},
#include "supervisor_ops.def"
#undef SV_FIELD
    {NULL, 0, 0}};

const sv_op_spec SV_OPS[] = {
#define SV_OP(name, answer, fields) {#name, answer, fields},
#include "supervisor_ops.def"
#undef SV_OP
    {NULL, 0, NULL}};

const sv_op_spec *sv_op_find(const char *name) {
  for (const sv_op_spec *op = SV_OPS; op->name; op++)
    if (strcmp(op->name, name) == 0) return op;
  return NULL;
}

static const sv_field_spec *field_spec(const char *name, size_t len) {
  for (const sv_field_spec *f = SV_FIELDS; f->name; f++)
    if (strlen(f->name) == len && memcmp(f->name, name, len) == 0) return f;
  return NULL;
}

size_t sv_op_fields(const sv_op_spec *op, const sv_field_spec **specs, int *required, size_t max) {
  size_t n = 0;
  for (const char *p = op->fields; *p;) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, " !");
    if (!len) break;
    const sv_field_spec *f = field_spec(p, len);
    p += len;
    int needed = *p == '!';
    if (needed) p++;
    if (f && n < max) specs[n] = f, required[n] = needed;
    if (f) n++;
  }
  return n;
}

/* The fields of one request as they go on the wire, with room for the
 * decimals they carry. */
typedef struct field_list {
  sv_field *items;
  size_t n, cap;
  char numbers[SV_MAX_OP_FIELDS][24];
  int nnumbers;
} field_list;

static int add(field_list *l, char tag, const char *data, size_t len) {
  if (l->n == SV_MAX_FIELDS) return -2;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    sv_field *items = realloc(l->items, cap * sizeof *items);
    if (!items) return -2;
    l->items = items, l->cap = cap;
  }
  l->items[l->n++] = (sv_field){tag, data, len};
  return 0;
}

static int add_number(field_list *l, char tag, long long value) {
  char *text = l->numbers[l->nnumbers++];
  snprintf(text, sizeof l->numbers[0], "%lld", value);
  return add(l, tag, text, strlen(text));
}

static int whole(double v) { return v == (double)(long long)v; }

/* Why the value of a list field is wrong, or NULL. */
static const char *bad_list(const sv_field_spec *f, const sv_value *v) {
  for (size_t i = 0; i < v->count; i++) {
    const char *s = v->list[i];
    if (!s) return "must be a list of strings";
    if (f->kind == SVF_ENV && (s[0] == '=' || !strchr(s, '='))) return "must be NAME=value entries";
  }
  return NULL;
}

/* Why a number is wrong for its kind, or NULL. */
static const char *bad_number(int kind, double v) {
  switch (kind) {
  case SVF_SECONDS: return v >= 0 && v <= 1e9 ? NULL : "must be seconds >= 0";
  case SVF_COUNT: return v >= 0 && v <= 9.2e18 && whole(v) ? NULL : "must be a whole number >= 0";
  case SVF_ID: return v >= 1 && v <= 9.2e18 && whole(v) ? NULL : "must be the id of a command (>= 1)";
  case SVF_SIGNAL: return v >= 1 && v <= 64 && whole(v) ? NULL : "must be a signal number 1..64";
  case SVF_MODE: return v >= 0 && v <= 07777 && whole(v) ? NULL : "must be file mode bits 0..4095";
  default: return NULL;
  }
}

/* One field's value onto the wire list: 0, -1 (why), -2 over the limits. */
static int add_value(field_list *l, const sv_field_spec *f, const sv_value *v, const char **why) {
  int rc = 0;
  if (f->kind == SVF_STRINGS || f->kind == SVF_ENV) {
    if ((*why = bad_list(f, v))) return -1;
    for (size_t i = 0; i < v->count && rc == 0; i++) rc = add(l, f->tag, v->list[i], strlen(v->list[i]));
    return rc;
  }
  if (f->kind == SVF_STRING || f->kind == SVF_BYTES) {
    if (v->len && !v->data) return *why = "has no bytes", -1;
    if (f->kind == SVF_STRING && v->len && memchr(v->data, '\0', v->len)) return *why = "holds a NUL byte", -1;
    return add(l, f->tag, v->data ? v->data : "", v->len);
  }
  if (f->kind == SVF_FLAG) return v->flag ? add(l, f->tag, "", 0) : 0;
  if ((*why = bad_number(f->kind, v->number))) return -1;
  if (f->kind == SVF_SECONDS) {
    /* rounded up, without libm (the supervisor links this file too) */
    double exact = v->number * 1000;
    long long ms = (long long)exact;
    if ((double)ms < exact) ms++;
    return ms > 0 ? add_number(l, f->tag, ms) : 0;
  }
  return add_number(l, f->tag, (long long)v->number);
}

/* The value a field gets when the caller gives none. */
static sv_value absent_value(const sv_field_spec *f) {
  sv_value v = {0};
  if (f->kind == SVF_MODE) v.number = 0644;
  return v;
}

static int failed(const char **why, const char *reason) {
  if (why) *why = reason;
  return -1;
}

/* An empty list or text counts as not given (bytes may be empty). */
static int given(const sv_field_spec *f, const sv_value *v) {
  if (!v || !v->present) return 0;
  if (f->kind == SVF_STRINGS || f->kind == SVF_ENV) return v->count > 0;
  return f->kind != SVF_STRING || v->len > 0;
}

int sv_encode_op(buf *out, const sv_op_spec *op, long long id, const sv_value *values, const char **why) {
  static _Thread_local char reason[160];
  const sv_field_spec *specs[SV_MAX_OP_FIELDS];
  int required[SV_MAX_OP_FIELDS];
  size_t n = sv_op_fields(op, specs, required, SV_MAX_OP_FIELDS);
  if (n > SV_MAX_OP_FIELDS) return failed(why, "the op declares more fields than SV_MAX_OP_FIELDS");
  field_list l = {0};
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const sv_field_spec *f = specs[i];
    const sv_value *v = values ? &values[i] : NULL;
    if (!given(f, v)) {
      if (required[i]) {
        snprintf(reason, sizeof reason, "%s needs '%s'", op->name, f->name);
        rc = failed(why, reason);
      } else if (f->kind == SVF_COUNT || f->kind == SVF_MODE) { /* always sent */
        sv_value absent = absent_value(f);
        rc = add_value(&l, f, &absent, why);
      }
      continue;
    }
    const char *what = NULL;
    rc = add_value(&l, f, v, &what);
    if (rc == -1) {
      snprintf(reason, sizeof reason, "field '%s' %s", f->name, what);
      failed(why, reason);
    }
  }
  if (rc == 0 && sv_encode(out, op->name, id, l.items, l.n) != 0) rc = -2;
  if (rc == -2) failed(why, "over the supervisor's limits (fields of at most 64 MiB, 130 MiB in all, 4096 fields)");
  free(l.items);
  return rc;
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

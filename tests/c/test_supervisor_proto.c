/* supervisor_proto: what the host encodes the supervisor parses back exactly,
 * whatever the chunking, and hostile bytes are refused without reading past
 * what arrived. */
#include "../../src/core/supervisor_proto.h"

#include <stdlib.h>

#include "test.h"

/* ---- values by name, for sv_encode_op ---- */

static sv_value list_of(const char *const *l) {
  sv_value v = {0};
  v.present = 1, v.list = l;
  while (l[v.count]) v.count++;
  return v;
}
static sv_value bytes_of(const char *data, size_t len) {
  sv_value v = {0};
  v.present = 1, v.data = data, v.len = len;
  return v;
}
static sv_value text_of(const char *s) { return bytes_of(s, strlen(s)); }
static sv_value number(double n) {
  sv_value v = {0};
  v.present = 1, v.number = n;
  return v;
}
static sv_value flag(void) {
  sv_value v = {0};
  v.present = 1, v.flag = 1;
  return v;
}

/* Encodes op with the values named (names NULL-terminated), the op's other fields absent. */
static int encode(buf *out, const char *op_name, long long id, const char *const *names, const sv_value *given) {
  const sv_op_spec *op = sv_op_find(op_name);
  const sv_field_spec *specs[SV_MAX_OP_FIELDS];
  int required[SV_MAX_OP_FIELDS];
  sv_value values[SV_MAX_OP_FIELDS] = {{0}};
  if (!op) return -9;
  size_t n = sv_op_fields(op, specs, required, SV_MAX_OP_FIELDS);
  for (size_t k = 0; names && names[k]; k++) {
    size_t i = 0;
    while (i < n && strcmp(specs[i]->name, names[k]) != 0) i++;
    if (i == n) return -9; /* the op does not take it */
    values[i] = given[k];
  }
  const char *why = NULL;
  return sv_encode_op(out, op, id, values, &why);
}
#define NAMES(...) (const char *const[]){__VA_ARGS__, NULL}
#define VALUES(...) (const sv_value[]){__VA_ARGS__}

static int field_is(const sv_field *f, char tag, const char *data, size_t len) {
  return f && f->tag == tag && f->len == len && memcmp(f->data, data, len) == 0;
}

static void run_round_trip(void) {
  const char *argv[] = {"sh", "-c", "echo 'a b'; cat", NULL};
  const char *env[] = {"FOO=bar", "EMPTY=", NULL};
  static const char input[] = "line\0with NUL,and comma\n";
  buf out = BUF_INIT;
  CHECK(encode(&out, "run", 7, NAMES("argv", "env", "cwd", "stdin", "timeout"),
               VALUES(list_of(argv), list_of(env), text_of("/workspace"), bytes_of(input, sizeof input - 1), number(3))) == 0);
  sv_request req;
  size_t used = 0;
  const char *error = NULL;
  CHECK(sv_parse(out.data, out.len, &req, &used, &error) == 1);
  CHECK(used == out.len);
  CHECK_STR(req.op, "run");
  CHECK(req.id == 7);
  CHECK(req.nfields == 8);
  CHECK(field_is(&req.fields[0], SV_TAG_ARG, "sh", 2));
  CHECK(field_is(&req.fields[2], SV_TAG_ARG, "echo 'a b'; cat", 15));
  CHECK(field_is(&req.fields[4], SV_TAG_ENV, "EMPTY=", 6));
  CHECK(field_is(sv_field_find(&req, SV_TAG_CWD), SV_TAG_CWD, "/workspace", 10));
  CHECK(field_is(sv_field_find(&req, SV_TAG_STDIN), SV_TAG_STDIN, input, sizeof input - 1));
  long long timeout = 0;
  CHECK(sv_field_number(&req, SV_TAG_TIMEOUT, &timeout) == 0 && timeout == 3000);
  CHECK(sv_field_number(&req, SV_TAG_SIGNAL, &timeout) == 1);
  sv_request_free(&req);
  buf_free(&out);
}

static void every_op_round_trips(void) {
  buf out = BUF_INIT;
  const char *argv[] = {"server", NULL};
  CHECK(encode(&out, "spawn", 1, NAMES("argv"), VALUES(list_of(argv))) == 0);
  CHECK(encode(&out, "python", 2, NAMES("code"), VALUES(bytes_of("x = 1\nx", 7))) == 0);
  CHECK(encode(&out, "kill", 1, NULL, NULL) == 0);
  CHECK(encode(&out, "signal", 1, NAMES("signal"), VALUES(number(15))) == 0);
  CHECK(encode(&out, "pack", 3, NAMES("path", "max_bytes", "max_entries"),
               VALUES(text_of("/workspace/output"), number(2147483648.0), number(20000))) == 0);
  CHECK(encode(&out, "resize", 1, NAMES("cols", "rows"), VALUES(number(120), number(40))) == 0);
  const char *ops[] = {"spawn", "python", "kill", "signal", "pack", "resize"};
  const long long ids[] = {1, 2, 1, 1, 3, 1};
  const size_t counts[] = {3, 1, 0, 1, 3, 2}; /* a spawn's cols and rows (counts) always go, 0 when absent */
  size_t pos = 0;
  for (size_t i = 0; i < 6; i++) {
    sv_request req;
    size_t used = 0;
    const char *error = NULL;
    CHECK(sv_parse(out.data + pos, out.len - pos, &req, &used, &error) == 1);
    CHECK_STR(req.op, ops[i]);
    CHECK(req.id == ids[i] && req.nfields == counts[i]);
    long long n = 0;
    if (i == 3) CHECK(sv_field_number(&req, SV_TAG_SIGNAL, &n) == 0 && n == 15);
    if (i == 4) CHECK(sv_field_number(&req, SV_TAG_MAXBYTES, &n) == 0 && n == 2147483648LL);
    if (i == 5) CHECK(sv_field_number(&req, SV_TAG_COLS, &n) == 0 && n == 120);
    sv_request_free(&req);
    pos += used;
  }
  CHECK(pos == out.len);
  buf_free(&out);
}

/* A spawn whose stdin stays open ('k' after its first bytes), writes to it
 * (any bytes, none at all) and its eof name their spawn in 'w'. */
static void stdin_requests_round_trip(void) {
  buf out = BUF_INIT;
  const char *argv[] = {"cat", NULL};
  static const char chunk[] = "{\"jsonrpc\":\"2.0\"}\n\0,\n";
  CHECK(encode(&out, "spawn", 4, NAMES("argv", "stdin", "keep_stdin"), VALUES(list_of(argv), bytes_of("first", 5), flag())) == 0);
  CHECK(encode(&out, "spawn", 5, NAMES("argv"), VALUES(list_of(argv))) == 0);
  CHECK(encode(&out, "write", 6, NAMES("target", "data"), VALUES(number(4), bytes_of(chunk, sizeof chunk - 1))) == 0);
  CHECK(encode(&out, "write", 7, NAMES("target", "data"), VALUES(number(4), bytes_of(NULL, 0))) == 0);
  CHECK(encode(&out, "eof", 8, NAMES("target"), VALUES(number(4))) == 0);
  sv_request req;
  size_t used = 0, pos = 0;
  const char *error = NULL;
  long long n = 0;
  CHECK(sv_parse(out.data, out.len, &req, &used, &error) == 1);
  CHECK_STR(req.op, "spawn");
  CHECK(field_is(sv_field_find(&req, SV_TAG_STDIN), SV_TAG_STDIN, "first", 5));
  CHECK(field_is(sv_field_find(&req, SV_TAG_KEEPSTDIN), SV_TAG_KEEPSTDIN, "", 0));
  sv_request_free(&req);
  pos += used;
  CHECK(sv_parse(out.data + pos, out.len - pos, &req, &used, &error) == 1);
  CHECK(req.id == 5 && sv_field_find(&req, SV_TAG_KEEPSTDIN) == NULL); /* a plain spawn: EOF after its stdin */
  sv_request_free(&req);
  pos += used;
  CHECK(sv_parse(out.data + pos, out.len - pos, &req, &used, &error) == 1);
  CHECK_STR(req.op, "write");
  CHECK(req.id == 6 && req.nfields == 2);
  CHECK(sv_field_number(&req, SV_TAG_TARGET, &n) == 0 && n == 4);
  CHECK(field_is(sv_field_find(&req, SV_TAG_STDIN), SV_TAG_STDIN, chunk, sizeof chunk - 1));
  sv_request_free(&req);
  pos += used;
  CHECK(sv_parse(out.data + pos, out.len - pos, &req, &used, &error) == 1);
  CHECK(req.id == 7 && field_is(sv_field_find(&req, SV_TAG_STDIN), SV_TAG_STDIN, "", 0));
  sv_request_free(&req);
  pos += used;
  CHECK(sv_parse(out.data + pos, out.len - pos, &req, &used, &error) == 1);
  CHECK_STR(req.op, "eof");
  CHECK(req.id == 8 && req.nfields == 1 && sv_field_number(&req, SV_TAG_TARGET, &n) == 0 && n == 4);
  sv_request_free(&req);
  pos += used;
  CHECK(pos == out.len);
  /* a write as large as a field may be, cut anywhere, is incomplete until whole */
  buf big = BUF_INIT;
  char *data = malloc(1 << 20);
  memset(data, 'x', 1 << 20);
  CHECK(encode(&big, "write", 9, NAMES("target", "data"), VALUES(number(4), bytes_of(data, 1 << 20))) == 0);
  CHECK(sv_parse(big.data, big.len - 1, &req, &used, &error) == 0 && used == big.len);
  CHECK(sv_parse(big.data, big.len, &req, &used, &error) == 1 && used == big.len);
  CHECK(sv_field_find(&req, SV_TAG_STDIN)->len == 1 << 20);
  sv_request_free(&req);
  free(data);
  buf_free(&big);
  buf_free(&out);
}

/* Every cut of a request is "incomplete" and asks for more than it has. */
static void cut_anywhere_is_incomplete(void) {
  const char *argv[] = {"cat", NULL};
  buf out = BUF_INIT;
  CHECK(encode(&out, "run", 12345, NAMES("argv", "cwd", "stdin"),
               VALUES(list_of(argv), text_of("/tmp"), bytes_of("0123456789", 10))) == 0);
  for (size_t cut = 0; cut < out.len; cut++) {
    char *copy = malloc(cut + 1); /* exactly cut bytes: ASan sees any read past them */
    memcpy(copy, out.data, cut);
    sv_request req;
    size_t need = 0;
    const char *error = NULL;
    int rc = sv_parse(copy, cut, &req, &need, &error);
    CHECK(rc == 0);
    CHECK(need > cut && need <= out.len);
    free(copy);
  }
  buf_free(&out);
}

static int refused(const char *text) {
  sv_request req;
  size_t used = 0;
  const char *error = NULL;
  size_t n = strlen(text);
  char *copy = malloc(n ? n : 1);
  memcpy(copy, text, n);
  int rc = sv_parse(copy, n, &req, &used, &error);
  free(copy);
  if (rc == 1) sv_request_free(&req);
  return rc == -1 && error != NULL;
}

static void hostile_input_is_refused(void) {
  CHECK(refused("run\n"));
  CHECK(refused("run 1\n"));
  CHECK(refused("RUN 1 0\n"));
  CHECK(refused("r-n 1 0\n"));
  CHECK(refused(" 1 0\n"));
  CHECK(refused("averyveryverylongop 1 0\n"));
  CHECK(refused("run 0 0\n"));
  CHECK(refused("run -1 0\n"));
  CHECK(refused("run 01 0\n"));
  CHECK(refused("run 9223372036854775808 0\n"));
  CHECK(refused("run 1 4097\n"));
  CHECK(refused("run 1 +1\n"));
  CHECK(refused("run 1 1 \n"));
  CHECK(refused("run 1 1\n0:,"));
  CHECK(refused("run 1 1\n2:ax;"));
  CHECK(refused("run 1 1\n03:axx,"));
  CHECK(refused("run 1 1\n-3:axx,"));
  CHECK(refused("run 1 1\n12345678901:a"));
  CHECK(refused("run 1 1\n67108865:a"));
  CHECK(refused("run 1 1\nx:a,"));
  char header[80];
  memset(header, 'a', sizeof header);
  header[79] = '\0';
  CHECK(refused(header)); /* no newline within the header limit */
  /* a huge declared total is refused before any of its data arrived */
  buf big = BUF_INIT;
  buf_append_str(&big, "run 1 3\n");
  for (int i = 0; i < 2; i++) {
    buf_append_str(&big, "67108864:i");
    buf_reserve(&big, 67108864);
    memset(big.data + big.len, 'x', 67108863);
    big.len += 67108863;
    buf_append_char(&big, ',');
  }
  buf_append_str(&big, "67108864:i");
  sv_request req;
  size_t used = 0;
  const char *error = NULL;
  CHECK(sv_parse(big.data, big.len, &req, &used, &error) == -1);
  buf_free(&big);
}

static void encoder_refuses_what_cannot_be_parsed(void) {
  buf out = BUF_INIT;
  const char *argv[] = {"true", NULL}, *no_argv[] = {NULL};
  const char *bad_env[] = {"NOEQUALS", NULL}, *bad_env2[] = {"=x", NULL};
  CHECK(sv_encode(&out, "Run", 1, NULL, 0) == -1);
  CHECK(sv_encode(&out, "", 1, NULL, 0) == -1);
  CHECK(sv_encode(&out, "run", 0, NULL, 0) == -1);
  CHECK(encode(&out, "run", 1, NAMES("argv"), VALUES(list_of(no_argv))) == -1);
  CHECK(encode(&out, "run", 1, NAMES("argv", "env"), VALUES(list_of(argv), list_of(bad_env))) == -1);
  CHECK(encode(&out, "run", 1, NAMES("argv", "env"), VALUES(list_of(argv), list_of(bad_env2))) == -1);
  CHECK(encode(&out, "run", 1, NAMES("argv", "timeout"), VALUES(list_of(argv), number(-0.005))) == -1);
  CHECK(encode(&out, "signal", 1, NAMES("signal"), VALUES(number(0))) == -1);
  CHECK(encode(&out, "signal", 1, NAMES("signal"), VALUES(number(65))) == -1);
  CHECK(encode(&out, "pack", 1, NAMES("max_bytes"), VALUES(number(0))) == -1);
  CHECK(encode(&out, "pack", 1, NAMES("path"), VALUES(text_of(""))) == -1);
  CHECK(encode(&out, "run", 1, NAMES("argv", "cwd"), VALUES(list_of(argv), bytes_of("a\0b", 3))) == -1); /* NUL in a path */
  CHECK(encode(&out, "write", 2, NAMES("target", "data"), VALUES(number(0), bytes_of("x", 1))) == -1);  /* no target */
  CHECK(encode(&out, "write", 2, NAMES("target", "data"), VALUES(number(1), bytes_of(NULL, 3))) == -1); /* bytes that are not there */
  CHECK(encode(&out, "write", 0, NAMES("target", "data"), VALUES(number(1), bytes_of("x", 1))) == -2); /* id 0 */
  CHECK(encode(&out, "eof", 2, NAMES("target"), VALUES(number(-1))) == -1);
  CHECK(out.len == 0); /* nothing half-written */
  buf_free(&out);
}

static void numbers_are_plain_decimals(void) {
  const char *text = "kill 5 3\n3:t12,4:t-12,3:b07,";
  sv_request req;
  size_t used = 0;
  const char *error = NULL;
  CHECK(sv_parse(text, strlen(text), &req, &used, &error) == 1);
  long long v = 0;
  CHECK(sv_field_number(&req, SV_TAG_TIMEOUT, &v) == 0 && v == 12);
  CHECK(sv_field_number(&req, SV_TAG_MAXBYTES, &v) == -1);
  sv_request_free(&req);
  const char *minus = "kill 5 1\n4:t-12,";
  CHECK(sv_parse(minus, strlen(minus), &req, &used, &error) == 1);
  CHECK(sv_field_number(&req, SV_TAG_TIMEOUT, &v) == -1);
  sv_request_free(&req);
}

/* The declaration (supervisor_ops.def) is whole: every field an op names is
 * a declared field, every field has a kind, every op name is a word. */
static void the_declaration_is_whole(void) {
  for (const sv_op_spec *op = SV_OPS; op->name; op++) {
    const sv_field_spec *specs[SV_MAX_OP_FIELDS];
    int required[SV_MAX_OP_FIELDS];
    size_t n = sv_op_fields(op, specs, required, SV_MAX_OP_FIELDS), words = 0;
    for (const char *p = op->fields; *p;) {
      while (*p == ' ') p++;
      if (!*p) break;
      words++;
      p += strcspn(p, " ");
    }
    if (n != words) fprintf(stderr, "    op %s names a field that is not declared: \"%s\"\n", op->name, op->fields);
    CHECK(n == words && n <= SV_MAX_OP_FIELDS);
    CHECK(sv_op_find(op->name) == op);
  }
  CHECK(sv_op_find("nope") == NULL);
}

int main(void) {
  RUN(run_round_trip);
  RUN(every_op_round_trips);
  RUN(stdin_requests_round_trip);
  RUN(cut_anywhere_is_incomplete);
  RUN(hostile_input_is_refused);
  RUN(encoder_refuses_what_cannot_be_parsed);
  RUN(numbers_are_plain_decimals);
  RUN(the_declaration_is_whole);
  TEST_EXIT();
}

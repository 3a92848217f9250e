/* supervisor_proto: what the host encodes the supervisor parses back exactly,
 * whatever the chunking, and hostile bytes are refused without reading past
 * what arrived. */
#include "../../src/core/supervisor_proto.h"

#include <stdlib.h>

#include "test.h"

static int field_is(const sv_field *f, char tag, const char *data, size_t len) {
  return f && f->tag == tag && f->len == len && memcmp(f->data, data, len) == 0;
}

static void run_round_trip(void) {
  const char *argv[] = {"sh", "-c", "echo 'a b'; cat", NULL};
  const char *env[] = {"FOO=bar", "EMPTY=", NULL};
  static const char input[] = "line\0with NUL,and comma\n";
  buf out = BUF_INIT;
  CHECK(sv_encode_run(&out, 7, SV_RUN, argv, env, "/workspace", input, sizeof input - 1, 3000) == 0);
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
  CHECK(sv_encode_run(&out, 1, SV_SPAWN, argv, NULL, NULL, NULL, 0, 0) == 0);
  CHECK(sv_encode_python(&out, 2, "x = 1\nx", 7, 0) == 0);
  CHECK(sv_encode_kill(&out, 1) == 0);
  CHECK(sv_encode_signal(&out, 1, 15) == 0);
  CHECK(sv_encode_pack(&out, 3, "/workspace/output", 2147483648LL, 20000) == 0);
  const char *ops[] = {"spawn", "python", "kill", "signal", "pack"};
  const long long ids[] = {1, 2, 1, 1, 3};
  const size_t counts[] = {1, 1, 0, 1, 3};
  size_t pos = 0;
  for (size_t i = 0; i < 5; i++) {
    sv_request req;
    size_t used = 0;
    const char *error = NULL;
    CHECK(sv_parse(out.data + pos, out.len - pos, &req, &used, &error) == 1);
    CHECK_STR(req.op, ops[i]);
    CHECK(req.id == ids[i] && req.nfields == counts[i]);
    long long n = 0;
    if (i == 3) CHECK(sv_field_number(&req, SV_TAG_SIGNAL, &n) == 0 && n == 15);
    if (i == 4) CHECK(sv_field_number(&req, SV_TAG_MAXBYTES, &n) == 0 && n == 2147483648LL);
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
  CHECK(sv_encode_run(&out, 4, SV_SPAWN_STDIN, argv, NULL, NULL, "first", 5, 0) == 0);
  CHECK(sv_encode_run(&out, 5, SV_SPAWN, argv, NULL, NULL, NULL, 0, 0) == 0);
  CHECK(sv_encode_write(&out, 6, 4, chunk, sizeof chunk - 1) == 0);
  CHECK(sv_encode_write(&out, 7, 4, NULL, 0) == 0);
  CHECK(sv_encode_eof(&out, 8, 4) == 0);
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
  CHECK(sv_encode_write(&big, 9, 4, data, 1 << 20) == 0);
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
  CHECK(sv_encode_run(&out, 12345, SV_RUN, argv, NULL, "/tmp", "0123456789", 10, 0) == 0);
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
  CHECK(sv_encode_run(&out, 1, SV_RUN, no_argv, NULL, NULL, NULL, 0, 0) == -1);
  CHECK(sv_encode_run(&out, 1, SV_RUN, argv, bad_env, NULL, NULL, 0, 0) == -1);
  CHECK(sv_encode_run(&out, 1, SV_RUN, argv, bad_env2, NULL, NULL, 0, 0) == -1);
  CHECK(sv_encode_run(&out, 1, SV_RUN, argv, NULL, NULL, NULL, 0, -5) == -1);
  CHECK(sv_encode_signal(&out, 1, 0) == -1);
  CHECK(sv_encode_signal(&out, 1, 65) == -1);
  CHECK(sv_encode_pack(&out, 1, "", 0, 0) == -1);
  CHECK(sv_encode_run(&out, 1, (enum sv_run_mode)3, argv, NULL, NULL, NULL, 0, 0) == -1);
  CHECK(sv_encode_write(&out, 2, 0, "x", 1) == -1);  /* no target */
  CHECK(sv_encode_write(&out, 2, 1, NULL, 3) == -1); /* bytes that are not there */
  CHECK(sv_encode_write(&out, 0, 1, "x", 1) == -1);
  CHECK(sv_encode_eof(&out, 2, -1) == -1);
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

int main(void) {
  RUN(run_round_trip);
  RUN(every_op_round_trips);
  RUN(stdin_requests_round_trip);
  RUN(cut_anywhere_is_incomplete);
  RUN(hostile_input_is_refused);
  RUN(encoder_refuses_what_cannot_be_parsed);
  RUN(numbers_are_plain_decimals);
  TEST_EXIT();
}

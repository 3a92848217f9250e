/* docker core: endpoints from DOCKER_HOST, frame demultiplexing, output caps. */
#include "../../src/core/docker_wire.h"

#include <stdlib.h>

#include "test.h"

static void endpoints(void) {
  docker_endpoint e;
  char err[256];
  CHECK(docker_endpoint_parse(NULL, NULL, NULL, "/home/u", &e, err, sizeof err) == 0);
  CHECK_STR(e.unix_socket, "/var/run/docker.sock");
  CHECK_STR(e.base_url, "http://localhost");
  CHECK(docker_endpoint_parse("unix:///run/user/1000/docker.sock", NULL, NULL, NULL, &e, err, sizeof err) == 0);
  CHECK_STR(e.unix_socket, "/run/user/1000/docker.sock");
  CHECK(docker_endpoint_parse("tcp://10.0.0.5:2375", NULL, NULL, NULL, &e, err, sizeof err) == 0);
  CHECK_STR(e.base_url, "http://10.0.0.5:2375");
  CHECK(e.unix_socket[0] == '\0' && !e.tls);
  CHECK(docker_endpoint_parse("tcp://h:2376", "1", NULL, "/home/u", &e, err, sizeof err) == 0);
  CHECK_STR(e.base_url, "https://h:2376");
  CHECK_STR(e.ca_file, "/home/u/.docker/ca.pem");
  CHECK(docker_endpoint_parse("tcp://h:2376", "1", "/certs", NULL, &e, err, sizeof err) == 0);
  CHECK_STR(e.key_file, "/certs/key.pem");
  CHECK(docker_endpoint_parse("ssh://user@host", NULL, NULL, NULL, &e, err, sizeof err) == -1);
  CHECK(strstr(err, "not supported") != NULL);
}

static void frame(buf *b, int stream, const char *payload) {
  size_t n = strlen(payload);
  unsigned char h[8] = {(unsigned char)stream, 0, 0, 0, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                        (unsigned char)(n >> 8), (unsigned char)n};
  buf_append(b, h, 8);
  buf_append(b, payload, n);
}

static void demux_splits_streams_whatever_the_chunking(void) {
  buf stream = BUF_INIT;
  frame(&stream, 1, "hello ");
  frame(&stream, 2, "warning\n");
  frame(&stream, 1, "world\n");
  for (size_t step = 1; step <= stream.len; step++) {
    docker_capture c;
    docker_capture_init(&c, 1 << 20);
    for (size_t i = 0; i < stream.len; i += step)
      CHECK(docker_capture_feed(&c, stream.data + i, stream.len - i < step ? stream.len - i : step) == 0);
    CHECK(!docker_demux_partial(&c.demux));
    buf out = BUF_INIT, err = BUF_INIT;
    CHECK(capped_result(&c.out[DOCKER_STDOUT], &out) == 0);
    CHECK(capped_result(&c.out[DOCKER_STDERR], &err) == 0);
    CHECK_STR(out.data, "hello world\n");
    CHECK_STR(err.data, "warning\n");
    buf_free(&out), buf_free(&err);
    docker_capture_free(&c);
  }
  buf_free(&stream);
}

static void a_malformed_header_is_an_error(void) {
  docker_capture c;
  docker_capture_init(&c, 100);
  CHECK(docker_capture_feed(&c, "HTTP/1.1 500 oops", 17) == -1);
  docker_capture_free(&c);
}

static void caps_keep_head_and_tail(void) {
  capped_output c;
  capped_init(&c, 10);
  const char *text = "0123456789abcdefghijklmnopqrstuvwxyz";
  for (size_t i = 0; i < strlen(text); i += 3) capped_write(&c, text + i, strlen(text) - i < 3 ? strlen(text) - i : 3);
  buf out = BUF_INIT;
  CHECK(capped_result(&c, &out) == 1);
  CHECK(strncmp(out.data, "01234\n[... 26 bytes omitted", 27) == 0);
  CHECK(strcmp(out.data + out.len - 5, "vwxyz") == 0);
  buf_free(&out);
  capped_free(&c);
}

static void output_that_fits_is_whole(void) {
  capped_output c;
  capped_init(&c, 10);
  capped_write(&c, "0123456", 7);
  capped_write(&c, "789", 3);
  buf out = BUF_INIT;
  CHECK(capped_result(&c, &out) == 0);
  CHECK_STR(out.data, "0123456789");
  buf_free(&out);
  capped_free(&c);
}

static void a_huge_write_keeps_memory_bounded(void) {
  capped_output c;
  capped_init(&c, 1024);
  char *block = malloc(1 << 20);
  memset(block, 'x', 1 << 20);
  for (int i = 0; i < 100; i++) capped_write(&c, block, 1 << 20);
  CHECK(c.total == 100ull << 20);
  CHECK(c.head.cap <= 4096 && c.tail_len == 512);
  free(block);
  capped_free(&c);
}


/* The message docker_error_message finds in body (NUL-terminated text). */
static int message_of(const char *body, buf *out) {
  buf_clear(out);
  return docker_error_message(body, strlen(body), out);
}

static void error_bodies_give_the_engines_message(void) {
  buf m = BUF_INIT;
  CHECK(message_of("{\"message\":\"No such container: abc\"}\n", &m) == 1);
  CHECK_STR(m.data, "No such container: abc");
  /* white space around tokens, other fields before and after */
  CHECK(message_of(" {\n \"status\" : 404 , \"message\" : \"gone\" , \"ok\": false, \"n\": null}\r\n", &m) == 1);
  CHECK_STR(m.data, "gone");
  /* escapes, including a quote and a backslash that a strstr scan would stop at */
  CHECK(message_of("{\"message\":\"say \\\"hi\\\" in C:\\\\tmp\\n\\ttab \\/ slash\"}", &m) == 1);
  CHECK_STR(m.data, "say \"hi\" in C:\\tmp\n\ttab / slash");
  /* \uXXXX: BMP characters as UTF-8, a surrogate pair as one 4-byte sequence */
  CHECK(message_of("{\"message\":\"caf\\u00e9 \\u20AC \\ud83d\\ude00\"}", &m) == 1);
  CHECK_STR(m.data, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  /* a lone surrogate becomes U+FFFD */
  CHECK(message_of("{\"message\":\"x\\ud800y\"}", &m) == 1);
  CHECK_STR(m.data, "x\xef\xbf\xbdy");
  /* \u0000 is kept: the length counts it */
  CHECK(message_of("{\"message\":\"a\\u0000b\"}", &m) == 1);
  CHECK(m.len == 3 && m.data[1] == '\0' && m.data[2] == 'b');
  buf_free(&m);
}

static void only_the_top_level_message_counts(void) {
  buf m = BUF_INIT;
  /* a nested "message" (and brackets inside strings) is not the answer */
  CHECK(message_of("{\"detail\":{\"message\":\"inner\"},\"x\":\"}{[\",\"message\":\"outer\"}", &m) == 1);
  CHECK_STR(m.data, "outer");
  CHECK(message_of("{\"errors\":[{\"message\":\"inner\"}],\"id\":\"x\"}", &m) == 0);
  CHECK_STR(m.data, "{\"errors\":[{\"message\":\"inner\"}],\"id\":\"x\"}");
  /* a key that merely ends in "message" */
  CHECK(message_of("{\"errormessage\":\"no\"}", &m) == 0);
  /* a "message" that is not a string */
  CHECK(message_of("{\"message\":42}", &m) == 0);
  CHECK_STR(m.data, "{\"message\":42}");
  /* the last of two, as a JSON decoder keeps it */
  CHECK(message_of("{\"message\":\"first\",\"message\":\"second\"}", &m) == 1);
  CHECK_STR(m.data, "second");
  buf_free(&m);
}

static void other_bodies_give_their_first_line(void) {
  buf m = BUF_INIT;
  CHECK(message_of("page not found  \r\nmore text\n", &m) == 0);
  CHECK_STR(m.data, "page not found");
  CHECK(message_of("", &m) == 0);
  CHECK(m.len == 0);
  /* broken JSON: cut, a bad escape, text after the object, a string key missing */
  CHECK(message_of("{\"message\":\"cut", &m) == 0);
  CHECK_STR(m.data, "{\"message\":\"cut");
  CHECK(message_of("{\"message\":\"bad \\x escape\"}", &m) == 0);
  CHECK(message_of("{\"message\":\"a\"} trailing", &m) == 0);
  CHECK_STR(m.data, "{\"message\":\"a\"} trailing");
  CHECK(message_of("{message:\"a\"}", &m) == 0);
  CHECK(message_of("[\"message\",\"a\"]", &m) == 0);
  CHECK(message_of("{\"message\":\"bad \\u12G4\"}", &m) == 0);
  CHECK(message_of("{\"message\":\"raw\nnewline\"}", &m) == 0);
  CHECK_STR(m.data, "{\"message\":\"raw");
  buf_clear(&m);
  CHECK(docker_error_message(NULL, 0, &m) == 0 && m.len == 0);
  buf_free(&m);
}

int main(void) {
  RUN(endpoints);
  RUN(demux_splits_streams_whatever_the_chunking);
  RUN(a_malformed_header_is_an_error);
  RUN(caps_keep_head_and_tail);
  RUN(output_that_fits_is_whole);
  RUN(a_huge_write_keeps_memory_bounded);
  RUN(error_bodies_give_the_engines_message);
  RUN(only_the_top_level_message_counts);
  RUN(other_bodies_give_their_first_line);
  TEST_EXIT();
}

/* docker core: endpoints from DOCKER_HOST, frame demultiplexing, output caps. */
#include "../../src/docker.h"

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

int main(void) {
  RUN(endpoints);
  RUN(demux_splits_streams_whatever_the_chunking);
  RUN(a_malformed_header_is_an_error);
  RUN(caps_keep_head_and_tail);
  RUN(output_that_fits_is_whole);
  RUN(a_huge_write_keeps_memory_bounded);
  TEST_EXIT();
}

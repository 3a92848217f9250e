/* egress_frames: the egress wire format encodes and parses back the same
 * messages whatever the chunking, and refuses every malformed header. */
#include "../../src/core/egress_frames.h"

#include <stdlib.h>

#include "test.h"

typedef struct log_ctx {
  buf text;
  int stop_after; /* on_msg stops the feed after this many messages (0: never) */
  int count;
} log_ctx;

static int on_msg(void *ctx, char kind, long long conn, const char *data, size_t n) {
  log_ctx *log = ctx;
  if (kind == 'K')
    buf_printf(&log->text, "K%lld=%zu%s;", conn, n, data ? "!data" : "");
  else
    buf_printf(&log->text, "%c%lld[%.*s];", kind, conn, (int)n, data);
  return log->stop_after && ++log->count >= log->stop_after;
}

/* Parses text in chunks of `step` bytes (0: whole); the log, or NULL on error. */
static char *parse(const char *text, size_t len, size_t step, char *error, size_t error_size) {
  eg_parser p;
  log_ctx log = {BUF_INIT, 0, 0};
  eg_parser_init(&p);
  int rc = 0;
  for (size_t at = 0; at < len && rc == 0; at += step ? step : len) {
    size_t n = step && len - at > step ? step : len - at;
    rc = eg_feed(&p, text + at, n, on_msg, &log);
  }
  if (error) snprintf(error, error_size, "%s", p.error);
  eg_parser_free(&p);
  if (rc != 0) buf_free(&log.text);
  else if (!log.text.data) buf_append_str(&log.text, "");
  return rc ? NULL : log.text.data;
}

static void encodes_every_kind(void) {
  buf out = BUF_INIT;
  CHECK(eg_encode(&out, 'R', 0, "egress 1 127.0.0.1:3128", 23) == 0);
  CHECK(eg_encode(&out, 'A', 1, NULL, 0) == 0);
  CHECK(eg_encode(&out, 'D', 1, "GET /\r\n", 7) == 0);
  CHECK(eg_encode(&out, 'K', 1, NULL, 1048576) == 0);
  CHECK(eg_encode(&out, 'H', 1, NULL, 0) == 0);
  CHECK(eg_encode(&out, 'C', 2147483647, "reset by the client", 19) == 0);
  CHECK_STR(out.data, "R 0 23\negress 1 127.0.0.1:3128A 1 0\nD 1 7\nGET /\r\nK 1 1048576\nH 1 0\n"
                      "C 2147483647 19\nreset by the client");
  buf_free(&out);
}

static void refuses_to_encode_outside_the_format(void) {
  buf out = BUF_INIT;
  CHECK(eg_encode(&out, 'd', 1, "x", 1) == -1);
  CHECK(eg_encode(&out, 'D', -1, "x", 1) == -1);
  CHECK(eg_encode(&out, 'D', 2147483648LL, "x", 1) == -1);
  CHECK(eg_encode(&out, 'K', 1, NULL, 1048577) == -1);
  CHECK(eg_encode(&out, 'D', 1, NULL, 3) == -1);
  char *big = calloc(1, 1048577);
  CHECK(eg_encode(&out, 'D', 1, big, 1048577) == -1);
  CHECK(out.len == 0);
  CHECK(eg_encode(&out, 'D', 1, big, 1048576) == 0);
  CHECK(out.len == 1048576 + sizeof "D 1 1048576\n" - 1);
  free(big);
  buf_free(&out);
}

static const char STREAM[] = "R 0 23\negress 1 127.0.0.1:3128A 1 0\nD 1 7\nGET /\r\nK 1 1048576\nA 2 0\n"
                             "D 2 3\n\n\n\nH 1 0\nK 0 0\nC 2 0\nC 1 19\nreset by the client";
static const char STREAM_LOG[] = "R0[egress 1 127.0.0.1:3128];A1[];D1[GET /\r\n];K1=1048576;A2[];D2[\n\n\n];"
                                 "H1[];K0=0;C2[];C1[reset by the client];";

static void round_trips_whatever_the_chunking(void) {
  for (size_t step = 0; step < 40; step++) {
    char *log = parse(STREAM, sizeof STREAM - 1, step, NULL, 0);
    CHECK_STR(log, STREAM_LOG);
    if (log && strcmp(log, STREAM_LOG) != 0) fprintf(stderr, "    (chunks of %zu bytes)\n", step);
    free(log);
  }
}

static int collect(void *ctx, char kind, long long conn, const char *data, size_t n) {
  buf *got = ctx;
  return kind != 'D' || conn != 5 || buf_append(got, data, n) != 0;
}

static void a_whole_window_in_one_message(void) {
  buf out = BUF_INIT, got = BUF_INIT;
  char *big = malloc(EGRESS_WINDOW);
  for (size_t i = 0; i < EGRESS_WINDOW; i++) big[i] = (char)(i * 7 + i / 4096);
  CHECK(eg_encode(&out, 'D', 5, big, EGRESS_WINDOW) == 0);
  eg_parser p;
  eg_parser_init(&p);
  size_t at = 0;
  for (size_t step = 1; at < out.len; step = step * 3 + 1) {
    size_t n = out.len - at < step ? out.len - at : step;
    CHECK(eg_feed(&p, out.data + at, n, collect, &got) == 0);
    at += n;
  }
  CHECK(eg_parser_pending(&p) == 0);
  CHECK(got.len == EGRESS_WINDOW && memcmp(got.data, big, EGRESS_WINDOW) == 0);
  eg_parser_free(&p);
  buf_free(&got);
  buf_free(&out);
  free(big);
}

/* Each must be refused, fed whole and byte at a time, with the reason named. */
static void refuses_every_malformed_header(void) {
  static const struct { const char *text, *reason; } bad[] = {
    {"D 01 3\nabc", "connection"},
    {"D 1 03\nabc", "length"},
    {"D 00 0\n", "connection"},
    {"D 1 1048577\n", "length"},
    {"K 1 1048577\n", "length"},
    {"D 2147483648 0\n", "connection"},
    {"D 99999999999999999999 0\n", "connection"},
    {"D -1 0\n", "connection"},
    {"D +1 0\n", "connection"},
    {"D 1 -0\n", "length"},
    {"d 1 0\n", "kind"},
    {"1 1 0\n", "kind"},
    {"\n", "kind"},
    {"DD 1 0\n", "blank"},
    {"D  1 0\n", "connection"},
    {"D 1  0\n", "length"},
    {"D 1 0 \n", "length"},
    {"D 1\n", "connection"},
    {"D 1 \n", "length"},
    {"D 1 3abc", "no LF"},
    {"D 1 3\r\nabc", "no LF"},
    {"A 1 0\nD 1 0000000000000000000000000000000000000", "32 bytes"},
    {"K 1 000000000000000000000000000000000000000000000\n", "32 bytes"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    for (size_t step = 0; step < 2; step++) {
      char error[96];
      char *log = parse(bad[i].text, strlen(bad[i].text), step, error, sizeof error);
      CHECK(log == NULL);
      if (log || !strstr(error, bad[i].reason))
        fprintf(stderr, "    %s: '%s' (step %zu): %s\n", log ? "accepted" : "reason", bad[i].text, step, error);
      free(log);
    }
  }
}

static void the_longest_header_passes(void) {
  const char text[] = "K 2147483647 1048576\n";   /* the longest valid header is shorter than 32 */
  char *log = parse(text, sizeof text - 1, 1, NULL, 0);
  CHECK_STR(log, "K2147483647=1048576;");
  free(log);
}

static void k_has_no_payload(void) {
  /* the bytes after a K header are the next message, never its payload */
  const char text[] = "K 3 5\nD 3 5\nhello";
  char *log = parse(text, sizeof text - 1, 1, NULL, 0);
  CHECK_STR(log, "K3=5;D3[hello];");
  free(log);
}

static void incomplete_is_pending_not_an_error(void) {
  eg_parser p;
  log_ctx log = {BUF_INIT, 0, 0};
  eg_parser_init(&p);
  CHECK(eg_feed(&p, "D 1 5\nhel", 9, on_msg, &log) == 0);
  CHECK(log.text.data == NULL);
  CHECK(eg_parser_pending(&p) > 0);
  CHECK(eg_feed(&p, "lo", 2, on_msg, &log) == 0);
  CHECK_STR(log.text.data, "D1[hello];");
  CHECK(eg_parser_pending(&p) == 0);
  CHECK(eg_feed(&p, "H 1", 3, on_msg, &log) == 0);
  CHECK(eg_parser_pending(&p) == 3);
  eg_parser_free(&p);
  buf_free(&log.text);
}

static void the_receiver_can_stop_the_feed(void) {
  eg_parser p;
  log_ctx log = {BUF_INIT, 2, 0};
  eg_parser_init(&p);
  CHECK(eg_feed(&p, "A 1 0\nA 2 0\nA 3 0\n", 18, on_msg, &log) == -1);
  CHECK_STR(log.text.data, "A1[];A2[];");
  CHECK(strstr(p.error, "receiver") != NULL);
  CHECK(eg_feed(&p, "A 4 0\n", 6, on_msg, &log) == -1);  /* stays stopped */
  CHECK_STR(log.text.data, "A1[];A2[];");
  eg_parser_free(&p);
  buf_free(&log.text);
}

int main(void) {
  RUN(encodes_every_kind);
  RUN(refuses_to_encode_outside_the_format);
  RUN(round_trips_whatever_the_chunking);
  RUN(a_whole_window_in_one_message);
  RUN(refuses_every_malformed_header);
  RUN(the_longest_header_passes);
  RUN(k_has_no_payload);
  RUN(incomplete_is_pending_not_an_error);
  RUN(the_receiver_can_stop_the_feed);
  TEST_EXIT();
}

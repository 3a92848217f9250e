/* One request, one response through the proxy: a body's end found however it is
 * cut (http_body), secret values replaced across any cut (scrub), and the exchange
 * that forwards exactly one request and scrubs or passes its response. */
#include "../../src/core/http_exchange.h"

#include <stdlib.h>

#include "../../src/core/http_body.h"
#include "../../src/core/http_head.h"
#include "test.h"

/* Feeds text to a body cut every `step` bytes; the payload and the bytes used. */
static long feed_in_steps(http_body *b, const char *text, size_t step, buf *payload) {
  size_t n = strlen(text), used = 0;
  for (size_t i = 0; i < n && !http_body_done(b); i += step) {
    size_t len = i + step < n ? step : n - i;
    long k = http_body_feed(b, text + i, len, payload);
    if (k < 0) return -1;
    used += (size_t)k;
    if ((size_t)k < len) break;
  }
  return (long)used;
}

static void a_chunked_body_ends_where_it_says_however_cut(void) {
  const char *text = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n";
  size_t body_len = strlen(text) - strlen("GET /smuggled HTTP/1.1\r\n\r\n");
  for (size_t step = 1; step <= 9; step++) {
    http_body b;
    buf payload = BUF_INIT;
    http_body_init(&b, HTTP_BODY_CHUNKED, 0);
    long used = feed_in_steps(&b, text, step, &payload);
    CHECK(used == (long)body_len && http_body_done(&b));
    CHECK(payload.len == 11 && memcmp(payload.data, "hello world", 11) == 0);
    buf_free(&payload);
  }
  http_body b;
  http_body_init(&b, HTTP_BODY_LENGTH, 5);
  CHECK(http_body_feed(&b, "helloGET /x", 11, NULL) == 5 && http_body_done(&b));
  http_body_init(&b, HTTP_BODY_NONE, 0);
  CHECK(http_body_done(&b) && http_body_feed(&b, "x", 1, NULL) == 0);
}

static int malformed(const char *text) {
  http_body b;
  http_body_init(&b, HTTP_BODY_CHUNKED, 0);
  return http_body_feed(&b, text, strlen(text), NULL) < 0 && b.why != NULL;
}

static void malformed_chunks_are_refused(void) {
  CHECK(malformed("5x\r\nhello\r\n0\r\n\r\n"));
  CHECK(malformed("\r\nhello"));
  CHECK(malformed("5\nhello\r\n"));
  CHECK(malformed("5\r\nhelloXX\r\n"));
  CHECK(malformed("1000000000000000\r\n"));
  CHECK(malformed("0\r\nTrailer: x\n\r\n"));
  buf big = BUF_INIT;
  buf_append_str(&big, "5;");
  for (int i = 0; i < 5000; i++) buf_append_char(&big, 'e');
  CHECK(malformed(big.data));
  buf_free(&big);
}

/* ---- scrub ---- */

static char *scrubbed(const char *text, size_t step) {
  scrub *s = scrub_new();
  scrub_add(s, "SECRET-VALUE-1234", 17, "<placeholder>", 13);
  scrub_add(s, "SECRET", 6, "<short>", 7); /* a prefix of the other: the longer wins */
  buf out = BUF_INIT;
  size_t n = strlen(text);
  for (size_t i = 0; i < n; i += step) scrub_feed(s, text + i, i + step < n ? step : n - i, &out);
  scrub_flush(s, &out);
  scrub_free(s);
  char *copy = strdup(out.data ? out.data : "");
  buf_free(&out);
  return copy;
}

static void values_are_replaced_however_the_stream_is_cut(void) {
  const char *text = "Authorization: Bearer SECRET-VALUE-1234\r\nX: SECRET-VALUE-1234SECRET-VALUE-1234 SECRET!\n"
                     "S SE SEC SECRET-VALUE-123 end SECRET-VALUE-1234";
  const char *want = "Authorization: Bearer <placeholder>\r\nX: <placeholder><placeholder> <short>!\n"
                     "S SE SEC <short>-VALUE-123 end <placeholder>";
  for (size_t step = 1; step <= 20; step++) {
    char *got = scrubbed(text, step);
    CHECK_STR(got, want);
    free(got);
  }
}

/* ---- the exchange ---- */

static http_exchange *exchange(int body, unsigned long long length, const char *method, int minor, int with_scrub) {
  http_exchange_opts o = {body, length, method, minor, NULL};
  if (with_scrub) {
    o.scrub = scrub_new();
    scrub_add(o.scrub, "tok-123456789", 13, "luagent-secret-x", 16);
  }
  return http_exchange_new(&o);
}

static void exactly_one_request_goes_upstream(void) {
  http_exchange *hx = exchange(HTTP_BODY_LENGTH, 5, "POST", 1, 0);
  buf up = BUF_INIT;
  CHECK(http_exchange_client(hx, "hel", 3, &up) == 0 && !http_exchange_request_complete(hx));
  CHECK(http_exchange_client(hx, "loGET /smuggled HTTP/1.1\r\n\r\n", 28, &up) == 0);
  CHECK(up.len == 5 && memcmp(up.data, "hello", 5) == 0 && http_exchange_request_complete(hx));
  CHECK(http_exchange_client(hx, "more", 4, &up) == 0 && up.len == 5);
  CHECK(http_exchange_dropped(hx) == 26 + 4);
  http_exchange_free(hx);
  buf_free(&up);

  hx = exchange(HTTP_BODY_CHUNKED, 0, "POST", 1, 0); /* decoded and framed again */
  const char *body = "3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n";
  CHECK(http_exchange_client(hx, body, strlen(body), &up) == 0);
  CHECK_STR(up.data, "5\r\nabcde\r\n0\r\n\r\n"); /* one feed, one chunk */
  CHECK(http_exchange_dropped(hx) == strlen("GET /smuggled HTTP/1.1\r\n\r\n"));
  http_exchange_free(hx);
  buf_free(&up);

  hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 0);
  CHECK(http_exchange_client(hx, "GET /second HTTP/1.1\r\n\r\n", 24, &up) == 0 && up.len == 0);
  http_exchange_free(hx);
  buf_free(&up);
}

static void a_response_ends_the_exchange_even_when_the_upstream_would_go_on(void) {
  http_exchange *hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 0);
  buf down = BUF_INIT;
  const char *answer = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbodyHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
  CHECK(http_exchange_upstream(hx, answer, 10, &down) == 0);
  CHECK(http_exchange_upstream(hx, answer + 10, strlen(answer) - 10, &down) == 1);
  CHECK(down.len == strlen("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbody"));
  http_exchange_free(hx);
  buf_free(&down);

  hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 0); /* a 100 Continue, then the answer */
  answer = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
  CHECK(http_exchange_upstream(hx, answer, strlen(answer), &down) == 1);
  CHECK_STR(down.data, answer);
  http_exchange_free(hx);
  buf_free(&down);

  hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 0); /* not HTTP: passed on to the close */
  CHECK(http_exchange_upstream(hx, "garbage\r\n\r\nmore", 15, &down) == 0);
  CHECK(http_exchange_upstream_end(hx, &down) == 1 && down.len == 15);
  http_exchange_free(hx);
  buf_free(&down);
}

static void a_scrubbed_response_is_replaced_and_framed_again(void) {
  const char *answer = "HTTP/1.1 200 OK\r\nX-Echo: Bearer tok-123456789\r\nTransfer-Encoding: chunked\r\n"
                       "Connection: keep-alive\r\n\r\n5\r\nBeare\r\n8\r\nr tok-12\r\n6\r\n345678\r\n3\r\n9!\n\r\n0\r\n\r\n"
                       "HTTP/1.1 200 OK\r\n";
  for (size_t step = 1; step <= 13; step += 3) {
    http_exchange *hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 1);
    buf down = BUF_INIT;
    int rc = 0;
    for (size_t i = 0; i < strlen(answer) && rc == 0; i += step) {
      size_t len = i + step < strlen(answer) ? step : strlen(answer) - i;
      rc = http_exchange_upstream(hx, answer + i, len, &down);
    }
    CHECK(rc == 1);
    CHECK(strstr(down.data, "tok-") == NULL);
    CHECK(strstr(down.data, "X-Echo: Bearer luagent-secret-x\r\n") != NULL);
    CHECK(strstr(down.data, "Connection: close\r\n") != NULL && strstr(down.data, "keep-alive") == NULL);
    /* the body, de-chunked: */
    http_body b;
    buf payload = BUF_INIT;
    http_body_init(&b, HTTP_BODY_CHUNKED, 0);
    const char *body = strstr(down.data, "\r\n\r\n") + 4;
    CHECK(http_body_feed(&b, body, strlen(body), &payload) == (long)strlen(body) && http_body_done(&b));
    CHECK_STR(payload.data, "Bearer luagent-secret-x!\n");
    CHECK(http_exchange_replaced(hx) == 2);
    buf_free(&payload);
    buf_free(&down);
    http_exchange_free(hx);
  }
}

static void a_scrubbed_response_to_http10_ends_at_the_close(void) {
  http_exchange *hx = exchange(HTTP_BODY_NONE, 0, "GET", 0, 1);
  buf down = BUF_INIT;
  const char *answer = "HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\nkey=tok-123456789";
  CHECK(http_exchange_upstream(hx, answer, strlen(answer), &down) == 1);
  CHECK(strstr(down.data, "Content-Length") == NULL && strstr(down.data, "Transfer-Encoding") == NULL);
  CHECK(strstr(down.data, "\r\n\r\nkey=luagent-secret-x") != NULL);
  http_exchange_free(hx);
  buf_free(&down);
}

static void what_a_scrub_cannot_see_into_is_refused(void) {
  http_exchange *hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 1);
  buf down = BUF_INIT;
  const char *answer = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc";
  CHECK(http_exchange_upstream(hx, answer, strlen(answer), &down) == -1);
  CHECK(strncmp(down.data, "HTTP/1.1 502 ", 13) == 0 && strstr(down.data, "gzip-encoded") != NULL);
  CHECK(strstr(http_exchange_why(hx), "gzip") != NULL);
  http_exchange_free(hx);
  buf_free(&down);

  hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 1);
  answer = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
  CHECK(http_exchange_upstream(hx, answer, strlen(answer), &down) == -1 && strstr(down.data, "101") != NULL);
  http_exchange_free(hx);
  buf_free(&down);

  hx = exchange(HTTP_BODY_NONE, 0, "GET", 1, 1); /* a body cut short: the held tail stays held */
  answer = "HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\nvalue tok-1234";
  CHECK(http_exchange_upstream(hx, answer, strlen(answer), &down) == 0);
  CHECK(http_exchange_upstream_end(hx, &down) == 0);
  CHECK(strstr(down.data, "tok-1234") == NULL);
  http_exchange_free(hx);
  buf_free(&down);
}

int main(void) {
  RUN(a_chunked_body_ends_where_it_says_however_cut);
  RUN(malformed_chunks_are_refused);
  RUN(values_are_replaced_however_the_stream_is_cut);
  RUN(exactly_one_request_goes_upstream);
  RUN(a_response_ends_the_exchange_even_when_the_upstream_would_go_on);
  RUN(a_scrubbed_response_is_replaced_and_framed_again);
  RUN(a_scrubbed_response_to_http10_ends_at_the_close);
  RUN(what_a_scrub_cannot_see_into_is_refused);
  TEST_EXIT();
}

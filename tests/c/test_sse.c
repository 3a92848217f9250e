/* sse: the parser gives the same events whatever the chunking. */
#include "../../src/core/sse.h"

#include <stdlib.h>

#include "test.h"

typedef struct collected {
  buf text; /* "event|data|id\n" per event */
  int count;
} collected;

static int collect(void *ctx, const sse_event *ev) {
  collected *c = ctx;
  buf_append(&c->text, ev->event, ev->event_len);
  buf_append_char(&c->text, '|');
  buf_append(&c->text, ev->data, ev->data_len);
  buf_append_char(&c->text, '|');
  buf_append(&c->text, ev->id, ev->id_len);
  buf_printf(&c->text, "|%ld\n", ev->retry);
  c->count++;
  return 0;
}

static void parse_in_chunks(const char *stream, size_t chunk, collected *out) {
  sse_parser p;
  sse_init(&p);
  size_t len = strlen(stream);
  for (size_t i = 0; i < len; i += chunk) {
    size_t n = len - i < chunk ? len - i : chunk;
    sse_feed(&p, stream + i, n, collect, out);
  }
  sse_free(&p);
}

static const char STREAM[] =
    "\xEF\xBB\xBF: a comment\r\n"
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\"}\r\n"
    "\r\n"
    "data: line one\n"
    "data: line two\n"
    "id: 42\n"
    "\n"
    "data:no space\r"
    "retry: 1500\r"
    "\r"
    "event: ping\n"
    "\n" /* no data: not dispatched */
    "data: caf\xC3\xA9 \xE2\x82\xAC\n"
    "\n"
    "data: [DONE]\n\n";

static void same_events_for_every_chunk_size(void) {
  collected whole = {BUF_INIT, 0};
  parse_in_chunks(STREAM, strlen(STREAM), &whole);
  CHECK(whole.count == 5);
  for (size_t chunk = 1; chunk <= 7; chunk++) {
    collected part = {BUF_INIT, 0};
    parse_in_chunks(STREAM, chunk, &part);
    CHECK(part.count == whole.count);
    CHECK_STR(part.text.data, whole.text.data);
    buf_free(&part.text);
  }
  buf_free(&whole.text);
}

static void fields_are_parsed(void) {
  collected c = {BUF_INIT, 0};
  parse_in_chunks(STREAM, 1, &c);
  CHECK_STR(c.text.data,
            "message_start|{\"type\":\"message_start\"}||-1\n"
            "message|line one\nline two|42|-1\n"
            "message|no space|42|1500\n"
            "message|caf\xC3\xA9 \xE2\x82\xAC|42|1500\n"
            "message|[DONE]|42|1500\n");
  buf_free(&c.text);
}

static void cut_stream_is_pending(void) {
  sse_parser p;
  collected c = {BUF_INIT, 0};
  sse_init(&p);
  const char *cut = "data: {\"a\":1}\n\ndata: {\"b\":";
  sse_feed(&p, cut, strlen(cut), collect, &c);
  CHECK(c.count == 1);
  CHECK(sse_pending(&p));
  sse_free(&p);
  sse_init(&p);
  const char *whole = "data: x\n\n";
  sse_feed(&p, whole, strlen(whole), collect, &c);
  CHECK(!sse_pending(&p));
  sse_free(&p);
  buf_free(&c.text);
}

static int stop_after_first(void *ctx, const sse_event *ev) {
  (void)ev;
  (*(int *)ctx)++;
  return 7;
}

static void emit_can_stop_the_parse(void) {
  sse_parser p;
  int seen = 0;
  sse_init(&p);
  const char *s = "data: a\n\ndata: b\n\n";
  CHECK(sse_feed(&p, s, strlen(s), stop_after_first, &seen) == 7);
  CHECK(seen == 1);
  sse_free(&p);
}

int main(void) {
  RUN(same_events_for_every_chunk_size);
  RUN(fields_are_parsed);
  RUN(cut_stream_is_pending);
  RUN(emit_can_stop_the_parse);
  TEST_EXIT();
}

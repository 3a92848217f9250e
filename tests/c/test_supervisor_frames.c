/* supervisor_frames: the host side of the supervisor's frames parses the same whatever the chunking. */
#include "../../src/core/supervisor_frames.h"

#include "test.h"

typedef struct log_ctx {
  buf text;
} log_ctx;

static void on_ready(void *ctx, const char *version) { buf_printf(&((log_ctx *)ctx)->text, "ready %s;", version); }

static void on_output(void *ctx, long long id, int stream, const char *data, size_t n) {
  buf_printf(&((log_ctx *)ctx)->text, "%c%lld[%.*s]", stream == 1 ? 'o' : 'e', id, (int)n, data);
}

static void on_failed(void *ctx, long long id, const char *data, size_t n) {
  buf_printf(&((log_ctx *)ctx)->text, "fail%lld[%.*s];", id, (int)n, data);
}

static void on_exited(void *ctx, long long id, const sv_exit *x) {
  buf_printf(&((log_ctx *)ctx)->text, "exit%lld=%d(%s)k%ld%s%s", id, x->code, x->flags, x->killed,
             x->timed_out ? "T" : "", x->oom ? "O" : "");
  if (x->mark >= 0) buf_printf(&((log_ctx *)ctx)->text, "m%lld", x->mark);
  buf_append_char(&((log_ctx *)ctx)->text, ';');
}

static const sv_frame_events EVENTS = {on_ready, on_output, on_failed, on_exited};

static const char STREAM[] = "R 2\nO 1 6\nhello\nE 2 3\nerrO 1 0\nF 3 9\nnot found\nX 3 127 - 0\nX 1 0 - 2\n"
                             "O 7 4\n\n\n\n\nX 7 137 ko\nX 8 137 t 12\nX 9 137 o 0\nX 10 0 - 0 42\nX 11 0 - 0 0\n";

static void parses_whatever_the_chunking(void) {
  log_ctx whole = {BUF_INIT};
  sv_frame_parser p;
  sv_frames_init(&p);
  CHECK(sv_frames_feed(&p, STREAM, sizeof STREAM - 1, &EVENTS, &whole) == 0);
  sv_frames_free(&p);
  CHECK_STR(whole.text.data, "ready 2;o1[hello\n]e2[err]fail3[not found];exit3=127()k0;exit1=0()k2;"
                             "o7[\n\n\n\n]exit7=137(ko)k0O;exit8=137(t)k12T;exit9=137(o)k0O;exit10=0()k0m42;exit11=0()k0m0;");
  for (size_t step = 1; step < 9; step++) {
    log_ctx part = {BUF_INIT};
    sv_frames_init(&p);
    for (size_t i = 0; i < sizeof STREAM - 1; i += step) {
      size_t n = sizeof STREAM - 1 - i < step ? sizeof STREAM - 1 - i : step;
      CHECK(sv_frames_feed(&p, STREAM + i, n, &EVENTS, &part) == 0);
    }
    sv_frames_free(&p);
    /* a payload cut in pieces arrives as several output calls: compare the bytes */
    CHECK(strstr(part.text.data, "exit7=137(ko)k0O;") != NULL);
    CHECK(strstr(part.text.data, "exit8=137(t)k12T;") != NULL);
    CHECK(strstr(part.text.data, "fail3[not found];") != NULL);
    CHECK(strstr(part.text.data, "exit9=137(o)k0O;exit10=0()k0m42;exit11=0()k0m0;") != NULL); /* the mark: the watch's generation */
    buf_free(&part.text);
  }
  buf_free(&whole.text);
}

static void garbage_is_an_error(void) {
  log_ctx ctx = {BUF_INIT};
  sv_frame_parser p;
  sv_frames_init(&p);
  CHECK(sv_frames_feed(&p, "Traceback (most recent call last):\n", 35, &EVENTS, &ctx) == -1);
  sv_frames_free(&p);
  buf_free(&ctx.text);
}

int main(void) {
  RUN(parses_whatever_the_chunking);
  RUN(garbage_is_an_error);
  TEST_EXIT();
}

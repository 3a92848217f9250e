/* json: scanning for what cjson would lose, and exact writing. */
#include "../../src/core/json.h"

#include <stdlib.h>

#include "test.h"

static void scan_finds_empty_arrays_and_big_ints_outside_strings(void) {
  json_scan_result r;
  const char *text = "{\"a\":[],\"b\":[ \n ],\"s\":\"[] 12345678901234567\",\"n\":12345678901234567,"
                     "\"f\":1234567890123456.5,\"small\":123}";
  json_scan(text, strlen(text), &r);
  CHECK(r.empty_arrays == 2);
  CHECK(r.big_ints == 1);
}

static void rewrite_marks_them(void) {
  buf out = BUF_INIT;
  const char *text = "[[],-98765432109876543,\"\\\"[]\"]";
  CHECK(json_rewrite(text, strlen(text), &out) == 0);
  CHECK_STR(out.data, "[[\"\\u0000luagent:[]\"],\"\\u0000luagent:int:-98765432109876543\",\"\\\"[]\"]");
  buf_free(&out);
}

static void strings_are_escaped_and_utf8_checked(void) {
  buf out = BUF_INIT;
  const char in[] = "a\"b\\c\n\t\x01 caf\xC3\xA9 bad:\xFF\xC3 end";
  json_write_string(&out, in, sizeof in - 1);
  CHECK_STR(out.data, "\"a\\\"b\\\\c\\n\\t\\u0001 caf\xC3\xA9 bad:\xEF\xBF\xBD\xEF\xBF\xBD end\"");
  buf_free(&out);
}

static void doubles_are_shortest_exact(void) {
  const double values[] = {0.1, 1.5, 1e300, 123456789.125, -0.000001234, 2.0 / 3.0};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    buf out = BUF_INIT;
    CHECK(json_write_double(&out, values[i]) == 0);
    CHECK(strtod(out.data, NULL) == values[i]);
    buf_free(&out);
  }
  buf out = BUF_INIT;
  json_write_double(&out, 0.1);
  CHECK_STR(out.data, "0.1");
  buf_free(&out);
  CHECK(json_write_double(&out, 1.0 / 0.0) == -1);
  buf_free(&out);
}

int main(void) {
  RUN(scan_finds_empty_arrays_and_big_ints_outside_strings);
  RUN(rewrite_marks_them);
  RUN(strings_are_escaped_and_utf8_checked);
  RUN(doubles_are_shortest_exact);
  TEST_EXIT();
}

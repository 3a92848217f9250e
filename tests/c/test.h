/* A tiny test harness for the C cores: each test prints "ok - name" or
 * "not ok - name" lines that tests/run counts. */
#ifndef LUAGENT_TEST_H
#define LUAGENT_TEST_H

#include <stdio.h>
#include <string.h>

static int test_failed_checks;
static int test_current_failed;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "    %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);  \
      test_current_failed = 1;                                                       \
    }                                                                                \
  } while (0)

#define CHECK_STR(actual, expected)                                                          \
  do {                                                                                       \
    const char *a_ = (actual), *e_ = (expected);                                             \
    if (!a_ || strcmp(a_, e_) != 0) {                                                        \
      fprintf(stderr, "    %s:%d: expected \"%s\", got \"%s\"\n", __FILE__, __LINE__, e_,    \
              a_ ? a_ : "(null)");                                                           \
      test_current_failed = 1;                                                               \
    }                                                                                        \
  } while (0)

#define RUN(fn)                                                     \
  do {                                                              \
    test_current_failed = 0;                                        \
    fn();                                                           \
    printf("%s - %s\n", test_current_failed ? "not ok" : "ok", #fn); \
    test_failed_checks += test_current_failed;                      \
  } while (0)

#define TEST_EXIT() return test_failed_checks ? 1 : 0

#endif

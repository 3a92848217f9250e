/* json: the pure-C halves of luagent.json.
 *
 * Decoding is done by the system's lua-cjson; its 2.1 release cannot tell
 * an empty array from an empty object and reads every number as a double.
 * json_scan() finds what cjson would lose (empty arrays, integers beyond
 * 2^53) and json_rewrite() marks them with sentinel strings that the binding
 * turns back into exact values.
 *
 * Encoding is ours: cjson 2.1 writes numbers with %.14g and cannot write
 * an empty array, both fatal for model API payloads. */
#ifndef LUAGENT_JSON_H
#define LUAGENT_JSON_H

#include <stddef.h>

#include "buf.h"

/* Sentinels in rewritten text (start with NUL, which no JSON text can hold raw). */
#define JSON_EMPTY_ARRAY_MARK "\\u0000luagent:[]"
#define JSON_BIG_INT_MARK "\\u0000luagent:int:"
#define JSON_MARK_PREFIX_DECODED "\0luagent:"
#define JSON_MARK_PREFIX_LEN 9

/* Counts empty arrays and long integer literals outside strings. */
typedef struct json_scan_result {
  size_t empty_arrays;
  size_t big_ints;
} json_scan_result;

void json_scan(const char *text, size_t len, json_scan_result *out);
/* Copies text into out with empty arrays and long integers replaced by
 * sentinel strings. */
int json_rewrite(const char *text, size_t len, buf *out);

/* Appends s as a JSON string literal; invalid UTF-8 becomes U+FFFD. */
int json_write_string(buf *out, const char *s, size_t len);
/* Appends a double in the shortest form that reads back exactly.
 * Returns -1 for NaN and infinities, which JSON cannot hold. */
int json_write_double(buf *out, double x);
int json_write_integer(buf *out, long long v);

#endif

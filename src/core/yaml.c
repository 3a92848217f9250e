/* yaml: parse to a libyaml document; type plain scalars; node positions (see yaml.h). */
#include "yaml.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int equals_any(const char *s, size_t len, const char *const *words) {
  for (; *words; words++)
    if (strlen(*words) == len && memcmp(s, *words, len) == 0) return 1;
  return 0;
}

static int all_digits(const char *s, size_t len, const char *digits) {
  if (len == 0) return 0;
  for (size_t i = 0; i < len; i++)
    if (!strchr(digits, s[i]) || s[i] == '\0') return 0;
  return 1;
}

static int resolve_integer(const char *s, size_t len, yaml_scalar_value *out) {
  const char *body = s;
  size_t n = len;
  int base = 10;
  if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    base = s[1] == 'x' ? 16 : 8;
    body += 2;
    n -= 2;
    if (!all_digits(body, n, base == 16 ? "0123456789abcdefABCDEF" : "01234567")) return 0;
  } else {
    if (n > 0 && (body[0] == '-' || body[0] == '+')) body++, n--;
    if (!all_digits(body, n, "0123456789")) return 0;
  }
  char tmp[72];
  if (len >= sizeof tmp) return 0;
  memcpy(tmp, s, len);
  tmp[len] = '\0';
  errno = 0;
  long long v = strtoll(base == 10 ? tmp : tmp + 2, NULL, base);
  if (errno == ERANGE) return 0; /* too big for an integer: typed as a float */
  out->integer = v;
  return 1;
}

static int resolve_float(const char *s, size_t len, yaml_scalar_value *out) {
  static const char *const inf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
  static const char *const neg_inf[] = {"-.inf", "-.Inf", "-.INF", NULL};
  static const char *const nan_words[] = {".nan", ".NaN", ".NAN", NULL};
  if (equals_any(s, len, inf)) return out->number = HUGE_VAL, 1;
  if (equals_any(s, len, neg_inf)) return out->number = -HUGE_VAL, 1;
  if (equals_any(s, len, nan_words)) return out->number = NAN, 1;
  /* [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE] [-+]? [0-9]+ )? */
  size_t i = 0, digits = 0;
  if (i < len && (s[i] == '-' || s[i] == '+')) i++;
  while (i < len && s[i] >= '0' && s[i] <= '9') i++, digits++;
  if (i < len && s[i] == '.') {
    i++;
    while (i < len && s[i] >= '0' && s[i] <= '9') i++, digits++;
  }
  if (digits == 0) return 0;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '-' || s[i] == '+')) i++;
    size_t exp_digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') i++, exp_digits++;
    if (exp_digits == 0) return 0;
  }
  if (i != len) return 0;
  char tmp[128];
  if (len >= sizeof tmp) return 0;
  memcpy(tmp, s, len);
  tmp[len] = '\0';
  out->number = strtod(tmp, NULL);
  return 1;
}

yaml_scalar_kind yaml_scalar_resolve(const char *s, size_t len, yaml_scalar_value *out) {
  static const char *const nulls[] = {"~", "null", "Null", "NULL", NULL};
  static const char *const trues[] = {"true", "True", "TRUE", NULL};
  static const char *const falses[] = {"false", "False", "FALSE", NULL};
  if (len == 0 || equals_any(s, len, nulls)) return YS_NULL;
  if (equals_any(s, len, trues)) return out->boolean = 1, YS_BOOL;
  if (equals_any(s, len, falses)) return out->boolean = 0, YS_BOOL;
  if (resolve_integer(s, len, out)) return YS_INT;
  if (resolve_float(s, len, out)) return YS_FLOAT;
  return YS_STRING;
}

int yaml_parse_document(const char *text, size_t len, yaml_document_t *doc, yaml_error *err) {
  yaml_parser_t parser;
  memset(err, 0, sizeof *err);
  if (!yaml_parser_initialize(&parser)) {
    snprintf(err->message, sizeof err->message, "out of memory");
    return -1;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  int rc;
  if (!yaml_parser_load(&parser, doc)) {
    const yaml_mark_t *mark =
        parser.problem_mark.line || parser.problem_mark.column ? &parser.problem_mark
                                                               : &parser.context_mark;
    err->line = mark->line + 1;
    err->column = mark->column + 1;
    if (parser.context)
      snprintf(err->message, sizeof err->message, "%s (%s)", parser.problem ? parser.problem : "error",
               parser.context);
    else
      snprintf(err->message, sizeof err->message, "%s",
               parser.problem ? parser.problem : "invalid YAML");
    rc = -1;
  } else if (!yaml_document_get_root_node(doc)) {
    yaml_document_delete(doc);
    rc = 0;
  } else {
    rc = 1;
  }
  yaml_parser_delete(&parser);
  return rc;
}

yaml_position yaml_node_position(yaml_document_t *doc, int index) {
  yaml_position pos = {0, 0};
  const yaml_node_t *node = yaml_document_get_node(doc, index);
  if (node) {
    pos.line = node->start_mark.line + 1;
    pos.column = node->start_mark.column + 1;
  }
  return pos;
}

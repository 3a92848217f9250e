/* yaml: scalar typing (YAML 1.2 core schema), error positions, node positions. */
#include "../../src/core/yaml.h"

#include <math.h>

#include "test.h"

static yaml_scalar_kind kind_of(const char *s, yaml_scalar_value *v) {
  return yaml_scalar_resolve(s, strlen(s), v);
}

static void scalars_are_typed(void) {
  yaml_scalar_value v;
  CHECK(kind_of("", &v) == YS_NULL);
  CHECK(kind_of("~", &v) == YS_NULL);
  CHECK(kind_of("null", &v) == YS_NULL);
  CHECK(kind_of("true", &v) == YS_BOOL && v.boolean == 1);
  CHECK(kind_of("False", &v) == YS_BOOL && v.boolean == 0);
  CHECK(kind_of("yes", &v) == YS_STRING); /* YAML 1.1 booleans are strings in 1.2 */
  CHECK(kind_of("42", &v) == YS_INT && v.integer == 42);
  CHECK(kind_of("-7", &v) == YS_INT && v.integer == -7);
  CHECK(kind_of("0x1F", &v) == YS_INT && v.integer == 31);
  CHECK(kind_of("0o17", &v) == YS_INT && v.integer == 15);
  CHECK(kind_of("3.25", &v) == YS_FLOAT && v.number == 3.25);
  CHECK(kind_of("1e3", &v) == YS_FLOAT && v.number == 1000);
  CHECK(kind_of(".inf", &v) == YS_FLOAT && isinf(v.number));
  CHECK(kind_of(".nan", &v) == YS_FLOAT && isnan(v.number));
  CHECK(kind_of("99999999999999999999", &v) == YS_FLOAT);
  CHECK(kind_of("1.2.3", &v) == YS_STRING);
  CHECK(kind_of("gpt-4o", &v) == YS_STRING);
  CHECK(kind_of("0x", &v) == YS_STRING);
}

static void syntax_error_has_line_and_column(void) {
  const char *text = "model:\n  name: x\n  limits: [1, 2\nnext: 3\n";
  yaml_document_t doc;
  yaml_error e;
  CHECK(yaml_parse_document(text, strlen(text), &doc, &e) == -1);
  CHECK(e.line == 4);
  CHECK(e.column >= 1);
  CHECK(strstr(e.message, "flow sequence") != NULL);
}

static void empty_stream_is_not_an_error(void) {
  yaml_document_t doc;
  yaml_error e;
  CHECK(yaml_parse_document("# only a comment\n", 17, &doc, &e) == 0);
}

/* The pair of `mapping` whose key is the scalar `key`, or NULL. */
static yaml_node_pair_t *pair_of(yaml_document_t *doc, yaml_node_t *mapping, const char *key) {
  for (yaml_node_pair_t *p = mapping->data.mapping.pairs.start; p < mapping->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key);
    if (k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0) return p;
  }
  return NULL;
}

static void nodes_know_where_they_start(void) {
  const char *text = "name: x\nvariants:\n  terse:\n    model.temperature: 0\ninputs:\n  - {input: a.csv}\n  - b\n";
  yaml_document_t doc;
  yaml_error e;
  CHECK(yaml_parse_document(text, strlen(text), &doc, &e) == 1);
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  yaml_node_pair_t *variants = pair_of(&doc, root, "variants");
  CHECK(variants != NULL);
  yaml_position p = yaml_node_position(&doc, variants->key);
  CHECK(p.line == 2 && p.column == 1);
  yaml_node_t *vmap = yaml_document_get_node(&doc, variants->value);
  yaml_node_pair_t *terse = pair_of(&doc, vmap, "terse");
  p = yaml_node_position(&doc, terse->key);
  CHECK(p.line == 3 && p.column == 3);
  yaml_node_pair_t *temp = pair_of(&doc, yaml_document_get_node(&doc, terse->value), "model.temperature");
  p = yaml_node_position(&doc, temp->key);
  CHECK(p.line == 4 && p.column == 5);
  yaml_node_t *inputs = yaml_document_get_node(&doc, pair_of(&doc, root, "inputs")->value);
  CHECK(inputs->type == YAML_SEQUENCE_NODE);
  p = yaml_node_position(&doc, inputs->data.sequence.items.start[1]);
  CHECK(p.line == 7 && p.column == 5);
  p = yaml_node_position(&doc, 999); /* no such node */
  CHECK(p.line == 0 && p.column == 0);
  yaml_document_delete(&doc);
}

int main(void) {
  RUN(scalars_are_typed);
  RUN(syntax_error_has_line_and_column);
  RUN(empty_stream_is_not_an_error);
  RUN(nodes_know_where_they_start);
  TEST_EXIT();
}

/* yaml: YAML text -> a libyaml document, plus the typing rules for plain
 * scalars (the YAML 1.2 core schema), with errors that carry line and column,
 * and where each node starts (so a checker can name the line of a key).
 * Pure C: the Lua binding (lua_yaml.c) turns documents into tables. */
#ifndef LUAGENT_YAML_H
#define LUAGENT_YAML_H

#include <stddef.h>
#include <yaml.h>

typedef enum { YS_NULL, YS_BOOL, YS_INT, YS_FLOAT, YS_STRING } yaml_scalar_kind;

typedef struct yaml_scalar_value {
  int boolean;
  long long integer;
  double number;
} yaml_scalar_value;

/* Types a plain (unquoted) scalar: null, true/false, decimal/0x/0o integers,
 * floats with .inf/.nan; anything else is a string. */
yaml_scalar_kind yaml_scalar_resolve(const char *s, size_t len, yaml_scalar_value *out);

typedef struct yaml_error {
  char message[256];
  size_t line, column; /* 1-based; 0 when unknown */
} yaml_error;

/* Parses the first document of `text`. Returns 1 with *doc filled (free it
 * with yaml_document_delete), 0 for an empty stream, -1 with *err filled. */
int yaml_parse_document(const char *text, size_t len, yaml_document_t *doc, yaml_error *err);

typedef struct yaml_position {
  size_t line, column; /* 1-based; 0 when the node does not exist */
} yaml_position;

/* Where node `index` (1-based, as libyaml numbers them) of a parsed document
 * starts in the text: for a mapping key, the key's first character; for a
 * sequence item, the item's. */
yaml_position yaml_node_position(yaml_document_t *doc, int index);

#endif

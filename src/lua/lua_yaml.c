/* lua_yaml: luagent.yaml.
 *
 *   yaml.load(text [, name [, opts]]) -> value [, positions] | nil, err
 *                                   err.line/err.column, 1-based
 *   yaml.load_file(path [, opts])   -> value [, positions] | nil, err   err.file names the path
 *   yaml.dump(value)          -> text               keys sorted, strings quoted when needed
 *   yaml.scalar(text)         -> value              how a plain scalar is typed
 *
 * Plain scalars are typed by the YAML 1.2 core schema; quoted ones stay
 * strings. null becomes nil. Sequences get the json array metatable, so an
 * empty YAML list is an empty JSON array. Aliases share one Lua table.
 *
 * opts.positions = true also returns where things are: positions[tbl][key]
 * = {line, col} (1-based) of each key of every mapping tbl in the value (a
 * key whose value is null is there too, though tbl lacks it), and
 * positions[list][i] of each item of every sequence. */
#include <errno.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fs.h"
#include "lua_util.h"
#include "yaml.h"

#define MAX_DEPTH 200

static void push_scalar(lua_State *L, const yaml_node_t *node) {
  const char *s = (const char *)node->data.scalar.value;
  size_t len = node->data.scalar.length;
  if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
    lua_pushlstring(L, s, len);
    return;
  }
  yaml_scalar_value v;
  switch (yaml_scalar_resolve(s, len, &v)) {
    case YS_NULL: lua_pushnil(L); break;
    case YS_BOOL: lua_pushboolean(L, v.boolean); break;
    case YS_INT: lua_pushinteger(L, (lua_Integer)v.integer); break;
    case YS_FLOAT: lua_pushnumber(L, v.number); break;
    case YS_STRING: lua_pushlstring(L, s, len); break;
  }
}

typedef struct converter {
  lua_State *L;
  yaml_document_t *doc;
  int cache;     /* stack index of {node index -> table}, so aliases share a table */
  int positions; /* stack index of {table -> {key -> {line, col}}}, or 0 */
} converter;

/* With positions on: pushes a new table P, recorded as positions[table at
 * idx] = P (for the caller to fill, then pop); else pushes nothing. */
static void open_positions(converter *c, int idx) {
  lua_State *L = c->L;
  if (!c->positions) return;
  idx = lua_absindex(L, idx);
  lua_newtable(L);
  lua_pushvalue(L, idx);
  lua_pushvalue(L, -2);
  lua_rawset(L, c->positions);
}

/* Sets P[key at key_idx] = {line, col} of node `index`; P is at p_idx. */
static void record_position(converter *c, int p_idx, int key_idx, int index) {
  lua_State *L = c->L;
  if (!c->positions) return;
  key_idx = lua_absindex(L, key_idx);
  yaml_position pos = yaml_node_position(c->doc, index);
  lua_pushvalue(L, key_idx);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)pos.line);
  lua_setfield(L, -2, "line");
  lua_pushinteger(L, (lua_Integer)pos.column);
  lua_setfield(L, -2, "col");
  lua_rawset(L, p_idx);
}

static void push_node(converter *c, int index, int depth);

static void push_sequence(converter *c, yaml_node_t *node, int depth) {
  lua_State *L = c->L;
  yaml_node_item_t *item = node->data.sequence.items.start;
  int n = (int)(node->data.sequence.items.top - item);
  lua_createtable(L, n, 0);
  int list = lua_gettop(L);
  if (luaL_getmetatable(L, "luagent.json.array") == LUA_TTABLE)
    lua_setmetatable(L, -2);
  else
    lua_pop(L, 1);
  open_positions(c, list);
  for (int i = 0; i < n; i++) {
    if (c->positions) {
      lua_pushinteger(L, i + 1);
      record_position(c, list + 1, -1, item[i]);
      lua_pop(L, 1);
    }
    push_node(c, item[i], depth + 1);
    lua_rawseti(L, list, i + 1);
  }
  if (c->positions) lua_pop(L, 1);
}

static void push_mapping(converter *c, yaml_node_t *node, int depth) {
  lua_State *L = c->L;
  yaml_node_pair_t *pair = node->data.mapping.pairs.start;
  int n = (int)(node->data.mapping.pairs.top - pair);
  lua_createtable(L, 0, n);
  int map = lua_gettop(L);
  open_positions(c, map);
  for (int i = 0; i < n; i++) {
    push_node(c, pair[i].key, depth + 1);
    if (lua_isnil(L, -1)) {
      lua_pop(L, 1);
      lua_pushliteral(L, "null"); /* a null key is kept under its spelling */
    }
    record_position(c, map + 1, -1, pair[i].key);
    push_node(c, pair[i].value, depth + 1);
    lua_rawset(L, map);
  }
  if (c->positions) lua_pop(L, 1);
}

static void push_node(converter *c, int index, int depth) {
  lua_State *L = c->L;
  if (depth > MAX_DEPTH) luaL_error(L, "YAML nesting deeper than %d levels", MAX_DEPTH);
  luaL_checkstack(L, 8, "YAML too deep");
  yaml_node_t *node = yaml_document_get_node(c->doc, index);
  if (node->type == YAML_SCALAR_NODE) {
    push_scalar(L, node);
    return;
  }
  if (lua_rawgeti(L, c->cache, index) != LUA_TNIL) return;
  lua_pop(L, 1);
  if (node->type == YAML_SEQUENCE_NODE)
    push_sequence(c, node, depth);
  else
    push_mapping(c, node, depth);
  lua_pushvalue(L, -1);
  lua_rawseti(L, c->cache, index);
}

/* Converts inside a protected call: a too-deep document raises, and the
 * document must still be freed. Arguments: the document, whether to keep
 * positions. Returns the value, and the positions when asked. */
static int convert_document(lua_State *L) {
  converter c = {L, lua_touserdata(L, 1), 0, 0};
  int want_positions = lua_toboolean(L, 2);
  lua_newtable(L);
  c.cache = lua_gettop(L);
  if (want_positions) {
    lua_newtable(L);
    c.positions = lua_gettop(L);
  }
  push_node(&c, 1, 0);
  if (!want_positions) return 1;
  lua_pushvalue(L, c.positions);
  return 2;
}

static int push_yaml_error(lua_State *L, const char *name, const yaml_error *e) {
  if (e->line)
    luagent_fail(L, "yaml", "%s:%d:%d: %s", name, (int)e->line, (int)e->column, e->message);
  else
    luagent_fail(L, "yaml", "%s: %s", name, e->message);
  luagent_error_set_string(L, "file", name);
  luagent_error_set_integer(L, "line", (lua_Integer)e->line);
  luagent_error_set_integer(L, "column", (lua_Integer)e->column);
  return 2;
}

static int load_text(lua_State *L, const char *text, size_t len, const char *name, int positions) {
  yaml_document_t doc;
  yaml_error e;
  int rc = yaml_parse_document(text, len, &doc, &e);
  if (rc < 0) return push_yaml_error(L, name, &e);
  if (rc == 0) { /* an empty file is an empty table, not an error */
    lua_newtable(L);
    if (!positions) return 1;
    lua_newtable(L);
    lua_pushvalue(L, -2);
    lua_newtable(L);
    lua_rawset(L, -3);
    return 2;
  }
  lua_pushcfunction(L, convert_document);
  lua_pushlightuserdata(L, &doc);
  lua_pushboolean(L, positions);
  int status = lua_pcall(L, 2, positions ? 2 : 1, 0);
  yaml_document_delete(&doc);
  if (status != LUA_OK) return luagent_fail(L, "yaml", "%s: %s", name, lua_tostring(L, -1));
  return positions ? 2 : 1;
}

/* opts.positions of the options table at idx (absent or nil: none). */
static int want_positions(lua_State *L, int idx) {
  if (lua_isnoneornil(L, idx)) return 0;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, "positions");
  int on = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return on;
}

/* yaml.load(text [, name [, opts]]) -> value [, positions] | nil, err */
static int l_load(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  const char *name = luaL_optstring(L, 2, "(yaml)");
  int positions = want_positions(L, 3);
  return load_text(L, text, len, name, positions);
}

/* yaml.load_file(path [, opts]) -> value [, positions] | nil, err */
static int l_load_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  int positions = want_positions(L, 2);
  buf b = BUF_INIT;
  char why[256];
  if (fs_read_file(path, &b, why, sizeof why) != 0) {
    luagent_fail(L, "io", "cannot read YAML file %s: %s", path, why);
    luagent_error_set_string(L, "file", path);
    return 2;
  }
  lua_pushlstring(L, b.data ? b.data : "", b.len);
  buf_free(&b);
  size_t len;
  const char *text = lua_tolstring(L, -1, &len);
  return load_text(L, text, len, path, positions);
}

/* yaml.scalar(text) -> the value a plain scalar `text` stands for */
static int l_scalar(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  yaml_node_t node;
  memset(&node, 0, sizeof node);
  node.type = YAML_SCALAR_NODE;
  node.data.scalar.value = (yaml_char_t *)s;
  node.data.scalar.length = len;
  node.data.scalar.style = YAML_PLAIN_SCALAR_STYLE;
  push_scalar(L, &node);
  return 1;
}

/* ---- dump ---- */

typedef struct dumper {
  lua_State *L;
  yaml_emitter_t emitter;
  buf out;
  int depth;
} dumper;

static int write_handler(void *data, unsigned char *buffer, size_t size) {
  dumper *d = data;
  return buf_append(&d->out, buffer, size) == 0;
}

static void emit(dumper *d, yaml_event_t *event) {
  if (!yaml_emitter_emit(&d->emitter, event))
    luaL_error(d->L, "yaml.dump: %s", d->emitter.problem ? d->emitter.problem : "emitter error");
}

static void emit_scalar(dumper *d, const char *s, size_t len, int plain_ok) {
  yaml_event_t ev;
  yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
  if (memchr(s, '\n', len) && plain_ok == 0) style = YAML_LITERAL_SCALAR_STYLE;
  yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, plain_ok, 1, style);
  emit(d, &ev);
}

static void emit_string(dumper *d, const char *s, size_t len) {
  yaml_scalar_value v;
  /* a string that would read back as another type must be quoted */
  int plain_ok = yaml_scalar_resolve(s, len, &v) == YS_STRING && !memchr(s, '\n', len);
  emit_scalar(d, s, len, plain_ok);
}

static void emit_value(dumper *d, int idx);

static int is_sequence(lua_State *L, int idx, lua_Integer *n) {
  lua_Integer count = 0, max = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
      lua_pop(L, 1);
      return 0;
    }
    lua_Integer k = lua_tointeger(L, -1);
    if (k > max) max = k;
    count++;
  }
  *n = max;
  if (count == 0) { /* an empty table is a list only when marked as one */
    if (!lua_getmetatable(L, idx)) return 0;
    luaL_getmetatable(L, "luagent.json.array");
    int marked = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return marked;
  }
  return count == max;
}

static int compare_keys(lua_State *L) {
  lua_pushboolean(L, strcmp(luaL_tolstring(L, 1, NULL), luaL_tolstring(L, 2, NULL)) < 0);
  return 1;
}

static void emit_mapping(dumper *d, int idx) {
  lua_State *L = d->L;
  yaml_event_t ev;
  yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_ANY_MAPPING_STYLE);
  emit(d, &ev);
  /* keys sorted, so the same table always dumps to the same text */
  lua_newtable(L);
  int keys = lua_gettop(L);
  lua_Integer n = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_rawseti(L, keys, ++n);
  }
  lua_getglobal(L, "table");
  lua_getfield(L, -1, "sort");
  lua_pushvalue(L, keys);
  lua_pushcfunction(L, compare_keys);
  lua_call(L, 2, 0);
  lua_pop(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, keys, i);
    size_t len;
    const char *k = luaL_tolstring(L, -1, &len);
    if (lua_type(L, -2) == LUA_TSTRING)
      emit_string(d, k, len);
    else
      emit_scalar(d, k, len, 1);
    lua_pop(L, 1);
    lua_gettable(L, idx);
    emit_value(d, lua_gettop(L));
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  yaml_mapping_end_event_initialize(&ev);
  emit(d, &ev);
}

static void emit_table(dumper *d, int idx) {
  lua_State *L = d->L;
  if (++d->depth > MAX_DEPTH) luaL_error(L, "yaml.dump: table nested deeper than %d (a cycle?)", MAX_DEPTH);
  luaL_checkstack(L, 8, "yaml.dump");
  yaml_event_t ev;
  lua_Integer n;
  if (is_sequence(L, idx, &n)) {
    yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_ANY_SEQUENCE_STYLE);
    emit(d, &ev);
    for (lua_Integer i = 1; i <= n; i++) {
      lua_rawgeti(L, idx, i);
      emit_value(d, lua_gettop(L));
      lua_pop(L, 1);
    }
    yaml_sequence_end_event_initialize(&ev);
    emit(d, &ev);
  } else {
    emit_mapping(d, idx);
  }
  d->depth--;
}

static void emit_value(dumper *d, int idx) {
  lua_State *L = d->L;
  char num[64];
  switch (lua_type(L, idx)) {
    case LUA_TNIL: emit_scalar(d, "null", 4, 1); break;
    case LUA_TBOOLEAN:
      lua_toboolean(L, idx) ? emit_scalar(d, "true", 4, 1) : emit_scalar(d, "false", 5, 1);
      break;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        snprintf(num, sizeof num, "%lld", (long long)lua_tointeger(L, idx));
      } else {
        double x = lua_tonumber(L, idx);
        if (isnan(x)) snprintf(num, sizeof num, ".nan");
        else if (isinf(x)) snprintf(num, sizeof num, x > 0 ? ".inf" : "-.inf");
        else snprintf(num, sizeof num, "%.17g", x);
        if (!strpbrk(num, ".eEn")) strcat(num, ".0");
      }
      emit_scalar(d, num, strlen(num), 1);
      break;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      emit_string(d, s, len);
      break;
    }
    case LUA_TTABLE: emit_table(d, idx); break;
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) { /* json.null */
        emit_scalar(d, "null", 4, 1);
        break;
      }
      /* fallthrough */
    default: luaL_error(L, "yaml.dump: cannot dump a %s", luaL_typename(L, idx));
  }
}

static int dump_protected(lua_State *L) {
  dumper *d = lua_touserdata(L, 2);
  yaml_event_t ev;
  yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
  emit(d, &ev);
  yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
  emit(d, &ev);
  emit_value(d, 1);
  yaml_document_end_event_initialize(&ev, 1);
  emit(d, &ev);
  yaml_stream_end_event_initialize(&ev);
  emit(d, &ev);
  return 0;
}

/* yaml.dump(value) -> text */
static int l_dump(lua_State *L) {
  luaL_checkany(L, 1);
  lua_settop(L, 1);
  dumper d;
  memset(&d, 0, sizeof d);
  d.L = L;
  if (!yaml_emitter_initialize(&d.emitter)) return luaL_error(L, "yaml.dump: out of memory");
  yaml_emitter_set_unicode(&d.emitter, 1);
  yaml_emitter_set_width(&d.emitter, -1);
  yaml_emitter_set_output(&d.emitter, write_handler, &d);
  lua_pushcfunction(L, dump_protected);
  lua_pushvalue(L, 1);
  lua_pushlightuserdata(L, &d);
  int status = lua_pcall(L, 2, 0, 0);
  yaml_emitter_delete(&d.emitter);
  if (status != LUA_OK) {
    buf_free(&d.out);
    return lua_error(L);
  }
  lua_pushlstring(L, d.out.data ? d.out.data : "", d.out.len);
  buf_free(&d.out);
  return 1;
}

int luaopen_luagent_yaml(lua_State *L) {
  static const luaL_Reg funcs[] = {{"load", l_load},
                                   {"load_file", l_load_file},
                                   {"dump", l_dump},
                                   {"scalar", l_scalar},
                                   {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}

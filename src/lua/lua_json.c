/* lua_json: luagent.json, exact for model API payloads.
 *
 *   json.decode(text)          -> value | nil, err   err.position: byte offset (1-based)
 *   json.encode(value [, {indent = n}]) -> text      keys sorted: same table, same bytes
 *   json.null                  the JSON null (cjson's sentinel)
 *   json.array(t)              -> t marked as an array ({} encodes as [])
 *   json.is_array(t)           -> boolean
 *
 * Decoding uses the system lua-cjson, with the fix-ups described in json.h:
 * integers come back as Lua integers (exact up to 2^63), every decoded array
 * carries the array mark (so [] survives a round trip), null is json.null.
 * Encoding raises on values JSON cannot hold (functions, NaN, cycles), naming
 * where in the value it found them. */
#include <errno.h>
#include <lauxlib.h>
#include <lua-cjson.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "lua_util.h"

#define ARRAY_CLASS "luagent.json.array"
#define MAX_DEPTH 1000

/* ---- decode ---- */

static void push_array_mark(lua_State *L) { luaL_getmetatable(L, ARRAY_CLASS); }

static int is_mark(const char *s, size_t len, const char *what, size_t what_len) {
  return len >= JSON_MARK_PREFIX_LEN + what_len &&
         memcmp(s, JSON_MARK_PREFIX_DECODED, JSON_MARK_PREFIX_LEN) == 0 &&
         memcmp(s + JSON_MARK_PREFIX_LEN, what, what_len) == 0;
}

/* Replaces the value on top of the stack by its exact form, if it needs one. */
static void fix_scalar(lua_State *L) {
  if (lua_type(L, -1) == LUA_TNUMBER && !lua_isinteger(L, -1)) {
    lua_Number x = lua_tonumber(L, -1);
    lua_Integer i;
    if (fabs(x) < 9007199254740992.0 && lua_numbertointeger(x, &i) && (lua_Number)i == x) {
      lua_pop(L, 1);
      lua_pushinteger(L, i);
    }
  } else if (lua_type(L, -1) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    if (len > 0 && s[0] == '\0' && is_mark(s, len, "int:", 4)) {
      const char *digits = s + JSON_MARK_PREFIX_LEN + 4;
      errno = 0;
      long long v = strtoll(digits, NULL, 10);
      int overflow = errno == ERANGE;
      double d = strtod(digits, NULL);
      lua_pop(L, 1);
      if (overflow) lua_pushnumber(L, d); /* beyond 64 bits: the nearest double */
      else lua_pushinteger(L, v);
    }
  }
}

static void fix_value(lua_State *L, int depth);

static void fix_table(lua_State *L, int depth) {
  int t = lua_gettop(L);
  if (lua_rawgeti(L, t, 1) != LUA_TNIL) {
    size_t len;
    const char *s = lua_tolstring(L, -1, &len);
    int empty_mark = lua_type(L, -1) == LUA_TSTRING && lua_rawlen(L, t) == 1 && s[0] == '\0' &&
                     is_mark(s, len, "[]", 2);
    lua_pop(L, 1);
    if (empty_mark) {
      lua_pushnil(L);
      lua_rawseti(L, t, 1);
    }
    push_array_mark(L); /* only arrays have integer keys after cjson */
    lua_setmetatable(L, t);
    if (empty_mark) return;
  } else {
    lua_pop(L, 1);
  }
  lua_pushnil(L);
  while (lua_next(L, t)) {
    fix_value(L, depth + 1);
    lua_pushvalue(L, -2);
    lua_insert(L, -2);
    lua_rawset(L, t); /* replacing an existing key's value is allowed during lua_next */
  }
}

static void fix_value(lua_State *L, int depth) {
  if (lua_type(L, -1) == LUA_TTABLE) {
    luaL_checkstack(L, 6, "JSON too deep");
    if (depth < MAX_DEPTH) fix_table(L, depth);
  } else {
    fix_scalar(L);
  }
}

static int cjson_decode(lua_State *L, const char *text, size_t len) {
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_pushlstring(L, text, len);
  return lua_pcall(L, 1, 1, 0);
}

static int decode_error(lua_State *L, const char *text, size_t len) {
  /* re-run on the original text so the reported position is the user's */
  lua_pop(L, 1);
  cjson_decode(L, text, len);
  const char *msg = lua_tostring(L, -1);
  const char *at = msg ? strstr(msg, "at character ") : NULL;
  lua_Integer position = at ? strtoll(at + 13, NULL, 10) : 0;
  luagent_fail(L, "json", "invalid JSON: %s", msg ? msg : "?");
  luagent_error_set_integer(L, "position", position);
  return 2;
}

/* json.decode(text) -> value | nil, err */
static int l_decode(lua_State *L) {
  size_t len;
  const char *text = luaL_checklstring(L, 1, &len);
  json_scan_result scan;
  json_scan(text, len, &scan);
  int status;
  if (scan.empty_arrays || scan.big_ints) {
    buf rewritten = BUF_INIT;
    if (json_rewrite(text, len, &rewritten) != 0) {
      buf_free(&rewritten);
      return luaL_error(L, "out of memory");
    }
    status = cjson_decode(L, rewritten.data, rewritten.len);
    buf_free(&rewritten);
  } else {
    status = cjson_decode(L, text, len);
  }
  if (status != LUA_OK) return decode_error(L, text, len);
  fix_value(L, 0);
  return 1;
}

/* ---- encode ---- */

typedef struct encoder {
  buf out;
  int indent;
  int depth;
  /* the path to the value being written, for error messages */
  const char *path_key[MAX_DEPTH + 1];
  lua_Integer path_index[MAX_DEPTH + 1];
} encoder;

static int encoder_gc(lua_State *L) {
  encoder *e = lua_touserdata(L, 1);
  buf_free(&e->out);
  return 0;
}

static int encode_fail(lua_State *L, encoder *e, const char *what) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "value");
  for (int i = 1; i <= e->depth; i++) {
    if (e->path_key[i]) {
      luaL_addchar(&b, '.');
      luaL_addstring(&b, e->path_key[i]);
    } else {
      char tmp[32];
      snprintf(tmp, sizeof tmp, "[%lld]", (long long)e->path_index[i]);
      luaL_addstring(&b, tmp);
    }
  }
  luaL_pushresult(&b);
  return luaL_error(L, "json.encode: %s at %s", what, lua_tostring(L, -1));
}

static void newline(encoder *e) {
  if (!e->indent) return;
  buf_append_char(&e->out, '\n');
  for (int i = 0; i < e->depth * e->indent; i++) buf_append_char(&e->out, ' ');
}

static void encode_value(lua_State *L, encoder *e, int idx);

/* -1: an object; else the array length. */
static lua_Integer array_length(lua_State *L, int idx) {
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  if (lua_getmetatable(L, idx)) {
    push_array_mark(L);
    int marked = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    if (marked) return n;
  }
  if (n == 0) return -1; /* an unmarked empty table is an object */
  lua_Integer count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    count++;
  }
  return count == n ? n : -1;
}

static void encode_array(lua_State *L, encoder *e, int idx, lua_Integer n) {
  buf_append_char(&e->out, '[');
  e->depth++;
  for (lua_Integer i = 1; i <= n; i++) {
    if (i > 1) buf_append_char(&e->out, ',');
    newline(e);
    e->path_key[e->depth] = NULL;
    e->path_index[e->depth] = i;
    lua_rawgeti(L, idx, i);
    encode_value(L, e, lua_gettop(L));
    lua_pop(L, 1);
  }
  e->depth--;
  if (n > 0) newline(e);
  buf_append_char(&e->out, ']');
}

typedef struct key_ref {
  const char *s;
  size_t len;
  int slot; /* index of the value in the scratch table */
} key_ref;

static int compare_key_refs(const void *a, const void *b) {
  const key_ref *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->s, y->s, n);
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

static void encode_object(lua_State *L, encoder *e, int idx) {
  size_t count = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    count++;
  }
  /* scratch: key strings and values stay referenced here while we sort */
  key_ref *keys = lua_newuserdatauv(L, count * sizeof *keys + 1, 0);
  lua_createtable(L, (int)count * 2, 0);
  int scratch = lua_gettop(L);
  size_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    int kt = lua_type(L, -2);
    if (kt != LUA_TSTRING && kt != LUA_TNUMBER) encode_fail(L, e, "a table key that is not a string or number");
    lua_rawseti(L, scratch, (lua_Integer)(2 * i + 2)); /* the value */
    lua_pushvalue(L, -1);
    keys[i].s = lua_tolstring(L, -1, &keys[i].len); /* a number key becomes its text */
    lua_rawseti(L, scratch, (lua_Integer)(2 * i + 1)); /* ...kept alive by the scratch table */
    keys[i].slot = (int)(2 * i + 2);
    i++;
  }
  qsort(keys, count, sizeof *keys, compare_key_refs);
  buf_append_char(&e->out, '{');
  e->depth++;
  for (i = 0; i < count; i++) {
    if (i > 0) buf_append_char(&e->out, ',');
    newline(e);
    json_write_string(&e->out, keys[i].s, keys[i].len);
    buf_append_str(&e->out, e->indent ? ": " : ":");
    e->path_key[e->depth] = keys[i].s;
    lua_rawgeti(L, scratch, keys[i].slot);
    encode_value(L, e, lua_gettop(L));
    lua_pop(L, 1);
  }
  e->depth--;
  if (count > 0) newline(e);
  buf_append_char(&e->out, '}');
  lua_pop(L, 2);
}

static void encode_value(lua_State *L, encoder *e, int idx) {
  switch (lua_type(L, idx)) {
    case LUA_TNIL: buf_append_str(&e->out, "null"); break;
    case LUA_TBOOLEAN: buf_append_str(&e->out, lua_toboolean(L, idx) ? "true" : "false"); break;
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx))
        json_write_integer(&e->out, (long long)lua_tointeger(L, idx));
      else if (json_write_double(&e->out, lua_tonumber(L, idx)) != 0)
        encode_fail(L, e, "NaN or infinity (JSON has no such number)");
      break;
    case LUA_TSTRING: {
      size_t len;
      const char *s = lua_tolstring(L, idx, &len);
      json_write_string(&e->out, s, len);
      break;
    }
    case LUA_TTABLE: {
      if (e->depth >= MAX_DEPTH) encode_fail(L, e, "nesting deeper than 1000 (a cycle?)");
      luaL_checkstack(L, 8, "json.encode");
      lua_Integer n = array_length(L, idx);
      if (n >= 0)
        encode_array(L, e, idx, n);
      else
        encode_object(L, e, idx);
      break;
    }
    case LUA_TLIGHTUSERDATA:
      if (lua_touserdata(L, idx) == NULL) {
        buf_append_str(&e->out, "null");
        break;
      }
      /* fallthrough */
    default: {
      char what[64];
      snprintf(what, sizeof what, "a %s (JSON cannot hold it)", luaL_typename(L, idx));
      encode_fail(L, e, what);
    }
  }
}

/* json.encode(value [, {indent = n}]) -> text */
static int l_encode(lua_State *L) {
  luaL_checkany(L, 1);
  int indent = 0;
  if (lua_istable(L, 2)) indent = (int)opt_integer(L, 2, "indent", 0);
  lua_settop(L, 1);
  encoder *e = lua_newuserdatauv(L, sizeof *e, 0);
  memset(e, 0, sizeof *e);
  e->indent = indent;
  luaL_setmetatable(L, "luagent.json.encoder");
  encode_value(L, e, 1);
  if (!e->out.data) buf_append(&e->out, "", 0);
  lua_pushlstring(L, e->out.data, e->out.len);
  buf_free(&e->out);
  return 1;
}

/* json.array(t) -> t, marked to encode as an array even when empty */
static int l_array(lua_State *L) {
  if (lua_isnoneornil(L, 1)) lua_newtable(L);
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  push_array_mark(L);
  lua_setmetatable(L, 1);
  return 1;
}

static int l_is_array(lua_State *L) {
  if (lua_type(L, 1) != LUA_TTABLE) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushboolean(L, array_length(L, 1) >= 0);
  return 1;
}

int luaopen_luagent_json(lua_State *L) {
  static const luaL_Reg funcs[] = {
      {"encode", l_encode}, {"array", l_array}, {"is_array", l_is_array}, {NULL, NULL}};
  if (luaL_newmetatable(L, ARRAY_CLASS)) {
    lua_pushliteral(L, "array");
    lua_setfield(L, -2, "__jsontype");
  }
  lua_pop(L, 1);
  if (luaL_newmetatable(L, "luagent.json.encoder")) {
    lua_pushcfunction(L, encoder_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  /* cjson, configured strictly, is the decoder */
  luaL_requiref(L, "cjson", luaopen_cjson, 0);
  lua_getfield(L, -1, "decode_invalid_numbers");
  lua_pushboolean(L, 0);
  lua_call(L, 1, 0);
  lua_getfield(L, -1, "null");
  lua_setfield(L, -3, "null");
  lua_getfield(L, -1, "decode");
  lua_pushcclosure(L, l_decode, 1);
  lua_setfield(L, -3, "decode");
  lua_pop(L, 1);
  return 1;
}

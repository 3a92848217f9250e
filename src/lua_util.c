/* lua_util: error values, option fields, class helper (see lua_util.h). */
#include "lua_util.h"

#include "buf.h"

#include <stdarg.h>
#include <string.h>

static const char ERROR_CLASS[] = "luagent.error";

static int error_tostring(lua_State *L) {
  lua_getfield(L, 1, "kind");
  lua_getfield(L, 1, "message");
  lua_pushfstring(L, "%s: %s", luaL_optstring(L, -2, "error"), luaL_optstring(L, -1, "?"));
  return 1;
}

static void push_error_metatable(lua_State *L) {
  if (luaL_newmetatable(L, ERROR_CLASS)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "luagent.error");
    lua_setfield(L, -2, "__name");
  }
}

/* Messages are formatted by C's vsnprintf (not lua_pushvfstring), so every
 * printf conversion works and the compiler checks the arguments. */
static void push_error_v(lua_State *L, const char *kind, const char *fmt, va_list ap) {
  lua_createtable(L, 0, 4);
  lua_pushstring(L, kind);
  lua_setfield(L, -2, "kind");
  buf message = BUF_INIT;
  buf_vprintf(&message, fmt, ap);
  lua_pushlstring(L, message.data ? message.data : "", message.len);
  buf_free(&message);
  lua_setfield(L, -2, "message");
  push_error_metatable(L);
  lua_setmetatable(L, -2);
}

void luagent_push_error(lua_State *L, const char *kind, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  push_error_v(L, kind, fmt, ap);
  va_end(ap);
}

int luagent_fail(lua_State *L, const char *kind, const char *fmt, ...) {
  lua_pushnil(L);
  va_list ap;
  va_start(ap, fmt);
  push_error_v(L, kind, fmt, ap);
  va_end(ap);
  return 2;
}

void luagent_error_set_string(lua_State *L, const char *key, const char *value) {
  lua_pushstring(L, value);
  lua_setfield(L, -2, key);
}

void luagent_error_set_integer(lua_State *L, const char *key, lua_Integer value) {
  lua_pushinteger(L, value);
  lua_setfield(L, -2, key);
}

/* Pushes t[field]; raises naming the field when it is neither nil nor `type`. */
static int get_field_of_type(lua_State *L, int t, const char *field, int type) {
  int actual = lua_getfield(L, t, field);
  if (actual == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (actual != type && !(type == LUA_TSTRING && actual == LUA_TNUMBER)) {
    luaL_error(L, "option '%s' must be a %s (got %s)", field, lua_typename(L, type),
               luaL_typename(L, -1));
  }
  return 1;
}

const char *opt_string(lua_State *L, int t, const char *field, const char *def, size_t *len) {
  t = lua_absindex(L, t);
  if (!get_field_of_type(L, t, field, LUA_TSTRING)) {
    if (len) *len = def ? strlen(def) : 0;
    return def;
  }
  /* the string stays alive: it is still referenced by the options table */
  const char *s = lua_tolstring(L, -1, len);
  lua_pop(L, 1);
  return s;
}

lua_Number opt_number(lua_State *L, int t, const char *field, lua_Number def) {
  if (!get_field_of_type(L, t, field, LUA_TNUMBER)) return def;
  lua_Number n = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return n;
}

lua_Integer opt_integer(lua_State *L, int t, const char *field, lua_Integer def) {
  if (!get_field_of_type(L, t, field, LUA_TNUMBER)) return def;
  int isint;
  lua_Integer n = lua_tointegerx(L, -1, &isint);
  if (!isint) luaL_error(L, "option '%s' must be an integer", field);
  lua_pop(L, 1);
  return n;
}

int opt_boolean(lua_State *L, int t, const char *field, int def) {
  if (!get_field_of_type(L, t, field, LUA_TBOOLEAN)) return def;
  int b = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return b;
}

int opt_function(lua_State *L, int t, const char *field) {
  return get_field_of_type(L, t, field, LUA_TFUNCTION);
}

void luagent_new_class(lua_State *L, const char *name, const luaL_Reg *methods) {
  luaL_newmetatable(L, name);
  lua_newtable(L); /* __index */
  for (const luaL_Reg *r = methods; r->name; r++) {
    lua_pushcfunction(L, r->func);
    if (strncmp(r->name, "__", 2) == 0)
      lua_setfield(L, -3, r->name);
    else
      lua_setfield(L, -2, r->name);
  }
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

/* lua_errors: the shared error metatable and the C helpers (see lua_errors.h). */
#include "lua_errors.h"

#include <lauxlib.h>
#include <stdarg.h>

#include "buf.h"

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

int luagent_is_error(lua_State *L, int idx) {
  if (!lua_getmetatable(L, idx)) return 0;
  luaL_getmetatable(L, ERROR_CLASS);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same;
}

int luaopen_luagent_errors_core(lua_State *L) {
  lua_createtable(L, 0, 1);
  push_error_metatable(L);
  lua_setfield(L, -2, "metatable");
  return 1;
}

/* lua_errors: the one error value every layer returns (STYLE.md, "Errors").
 *
 * An error is a table {kind, message, ...details} whose metatable is the
 * registry's "luagent.error": tostring(err) reads "kind: message". The C
 * bindings make them with luagent_fail/luagent_push_error; Lua code with
 * luagent.errors.new, which shares this metatable through the C module
 * luagent.errors.core. The catalogue of kinds (what each means, whether a
 * retry can help) is lua/luagent/errors.lua. */
#ifndef LUAGENT_LUA_ERRORS_H
#define LUAGENT_LUA_ERRORS_H

#include <lua.h>

/* Pushes an error value {kind, message} with the shared metatable. */
void luagent_push_error(lua_State *L, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Pushes nil and an error value; returns 2, for `return luagent_fail(...)`. */
int luagent_fail(lua_State *L, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets field `key` of the table on top of the stack (an error, or a result). */
void luagent_error_set_string(lua_State *L, const char *key, const char *value);
void luagent_error_set_integer(lua_State *L, const char *key, lua_Integer value);
/* Is the value at idx an error value? */
int luagent_is_error(lua_State *L, int idx);

/* luagent.errors.core: {metatable = the shared metatable} for errors.lua. */
int luaopen_luagent_errors_core(lua_State *L);

#endif

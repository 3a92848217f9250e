/* lua_http_head: the Lua face of src/core/http_head.c (luagent.http_head), and
 * the one function that turns a parsed request into its Lua table, which the
 * egress binding's head() gives too. */
#ifndef LUAGENT_LUA_HTTP_HEAD_H
#define LUAGENT_LUA_HTTP_HEAD_H

#include <lua.h>

#include "http_head.h"

/* Pushes the table of a parsed request (lua/meta/http_head.lua, luagent.HttpRequest). */
void lhttp_push_request(lua_State *L, const http_message *m);
/* Pushes nil and a protocol error {message = why, status = status}; returns 2. */
int lhttp_fail(lua_State *L, int status, const char *why);

int luaopen_luagent_http_head(lua_State *L);

#endif

/* lua_docker_wire: the engine's answers as Lua values — errors read from an
 * engine's error body, failed transfers, capped outputs as result fields —
 * and the endpoint from DOCKER_HOST & co. (see lua_docker_wire.h; the pure
 * parts are src/core/docker_wire.c). Called by the parts of
 * luagent.engine_stream, never calling them:
 *
 *   engine_stream.endpoint([docker_host]) -> {unix_socket, url, ca_file, cert_file,
 *       key_file, description} | nil, err      from DOCKER_HOST & co.
 *   engine_stream.engine_error(status, body [, what]) -> err   the one reading of
 *       an engine error body (kind not_found | conflict | docker; status,
 *       engine_message; message "WHAT: Docker engine says: MSG (HTTP N)") */
#include "lua_docker_wire.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "lua_http.h"
#include "lua_util.h"

void lwire_push_error(lua_State *L, long status, const char *body, size_t len, const char *what) {
  buf message = BUF_INIT;
  int rc = docker_error_message(body, len, &message);
  lua_pushlstring(L, message.data ? message.data : "", message.len);
  buf_free(&message); /* before anything can raise */
  if (rc < 0) luaL_error(L, "out of memory");
  int message_idx = lua_gettop(L);
  const char *kind = status == 404 ? "not_found" : status == 409 ? "conflict" : "docker";
  const char *text = lua_rawlen(L, message_idx) ? lua_tostring(L, message_idx) : "no message";
  luagent_push_error(L, kind, "%s%sDocker engine says: %s (HTTP %ld)", what ? what : "", what ? ": " : "", text,
                     status);
  luagent_error_set_integer(L, "status", status);
  lua_pushvalue(L, message_idx);
  lua_setfield(L, -2, "engine_message");
  lua_remove(L, message_idx);
}

int lwire_push_failure(lua_State *L, http_xfer *x) {
  if (http_failed(x) && !http_status(x)) return lhttp_push_failure(L, x);
  const buf *body = http_body(x);
  lua_pushnil(L);
  lwire_push_error(L, http_status(x), body->data, body->len, NULL);
  return 2;
}

int lwire_is_success(long status) { return status >= 200 && status < 300; }

void lwire_set_output(lua_State *L, const capped_output *c, const char *name, const char *bytes_name,
                      int *truncated) {
  buf out = BUF_INIT;
  *truncated |= capped_result(c, &out);
  lua_pushlstring(L, out.data ? out.data : "", out.len);
  buf_free(&out);
  lua_setfield(L, -2, name);
  lua_pushinteger(L, (lua_Integer)c->total);
  lua_setfield(L, -2, bytes_name);
}

int lwire_endpoint(lua_State *L) {
  const char *docker_host = luaL_optstring(L, 1, getenv("DOCKER_HOST"));
  docker_endpoint e;
  char err[512];
  if (docker_endpoint_parse(docker_host, getenv("DOCKER_TLS_VERIFY"), getenv("DOCKER_CERT_PATH"),
                            getenv("HOME"), &e, err, sizeof err) != 0)
    return luagent_fail(L, "config", "%s", err);
  lua_createtable(L, 0, 6);
  if (e.unix_socket[0]) luagent_error_set_string(L, "unix_socket", e.unix_socket);
  luagent_error_set_string(L, "url", e.base_url);
  luagent_error_set_string(L, "description", e.description);
  if (e.tls) {
    luagent_error_set_string(L, "ca_file", e.ca_file);
    luagent_error_set_string(L, "cert_file", e.cert_file);
    luagent_error_set_string(L, "key_file", e.key_file);
  }
  return 1;
}

int lwire_engine_error(lua_State *L) {
  lua_Integer status = luaL_checkinteger(L, 1);
  size_t len;
  const char *body = luaL_optlstring(L, 2, "", &len);
  const char *what = luaL_optstring(L, 3, NULL);
  lwire_push_error(L, (long)status, body, len, what);
  return 1;
}

/* The lines of opts.headers ({name = value}) as a NULL-terminated array;
 * the lines and the array are kept in the table at `anchor`. */
static const char *const *read_headers(lua_State *L, int anchor) {
  lua_getfield(L, 1, "headers");
  luaL_argcheck(L, lua_istable(L, -1), 1, "option 'headers' must be a table of name = value");
  int headers = lua_gettop(L), count = 0;
  for (lua_pushnil(L); lua_next(L, headers); lua_pop(L, 1)) {
    const char *name = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    const char *value = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    if (!name || !value) luaL_error(L, "option 'headers': every entry must be name = string value");
    if (!*name || strpbrk(name, "\r\n: ") || strpbrk(value, "\r\n"))
      luaL_error(L, "option 'headers': header '%s' is not a name and a value of one line", name);
    lua_pushfstring(L, "%s: %s", name, value);
    lua_rawseti(L, anchor, ++count);
  }
  const char **lines = lua_newuserdatauv(L, ((size_t)count + 1) * sizeof *lines, 0);
  for (int i = 0; i < count; i++) {
    lua_rawgeti(L, anchor, i + 1);
    lines[i] = lua_tostring(L, -1); /* the string stays in the anchor */
    lua_pop(L, 1);
  }
  lines[count] = NULL;
  lua_setfield(L, anchor, "lines");
  lua_pop(L, 1);
  return lines;
}

/* The attach target from the options at index 1. What must outlive this
 * call (a url made from `path`, the header lines) is kept in one table it
 * pushes; nothing is pushed when there is none (the attach copies what it
 * keeps: it can go once it started). */
attach_target lwire_attach_target(lua_State *L) {
  attach_target t = {0};
  t.url = opt_string(L, 1, "url", NULL, NULL);
  t.unix_socket = opt_string(L, 1, "unix_socket", NULL, NULL);
  const char *path = opt_string(L, 1, "path", NULL, NULL);
  luaL_argcheck(L, t.url || (path && t.unix_socket), 1, "option 'url' (or 'unix_socket' and 'path') is required");
  int has_headers = lua_getfield(L, 1, "headers") != LUA_TNIL;
  lua_pop(L, 1);
  if (!t.url || has_headers) {
    lua_newtable(L);
    int anchor = lua_gettop(L);
    if (!t.url) {
      t.url = lua_pushfstring(L, "http://localhost%s", path);
      lua_setfield(L, anchor, "url");
    }
    if (has_headers) t.headers = read_headers(L, anchor);
  }
  lhttp_read_tls(L, 1, &t.tls);
  t.connect_timeout = opt_number(L, 1, "connect_timeout", 0);
  t.websocket = opt_boolean(L, 1, "websocket", 0);
  return t;
}

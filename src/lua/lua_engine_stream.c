/* lua_engine_stream: luagent.engine_stream — the raw streaming half of the Docker
 * Engine API client, assembled from its parts (lua_engine_stream.h). JSON calls
 * are plain http.request calls made by lua/luagent/engine_client.lua; what must not
 * pass through Lua strings chunk by chunk is here.
 *
 *   engine_stream.endpoint([docker_host]) -> {unix_socket, url, ca_file, cert_file,
 *       key_file, description} | nil, err      from DOCKER_HOST & co.
 *   engine_stream.engine_error(status, body [, what]) -> err   the one reading of
 *       an engine error body (kind not_found | conflict | docker; status,
 *       engine_message; message "WHAT: Docker engine says: MSG (HTTP N)")
 *   engine_stream.exec_start(opts) -> stream          (lua_exec_stream.c)
 *   engine_stream.put_archive / get_archive / save_archive / read_file (lua_archive.c)
 *   engine_stream.supervisor(opts) -> channel | nil, err  (lua_supervisor_channel.c: the
 *       channel to the sandbox supervisor)
 * Engine errors of the streams come back as engine_error values. */
#include "lua_engine_stream.h"

#include <lauxlib.h>
#include <stdlib.h>

#include "lua_http.h"
#include "lua_tar.h"
#include "lua_util.h"

void lengine_push_error(lua_State *L, long status, const char *body, size_t len, const char *what) {
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

int lengine_push_failure(lua_State *L, http_xfer *x) {
  if (http_failed(x) && !http_status(x)) return lhttp_push_failure(L, x);
  const buf *body = http_body(x);
  lua_pushnil(L);
  lengine_push_error(L, http_status(x), body->data, body->len, NULL);
  return 2;
}

int lengine_is_success(long status) { return status >= 200 && status < 300; }

void lengine_set_output(lua_State *L, const capped_output *c, const char *name, const char *bytes_name,
                        int *truncated) {
  buf out = BUF_INIT;
  *truncated |= capped_result(c, &out);
  lua_pushlstring(L, out.data ? out.data : "", out.len);
  buf_free(&out);
  lua_setfield(L, -2, name);
  lua_pushinteger(L, (lua_Integer)c->total);
  lua_setfield(L, -2, bytes_name);
}

/* engine_stream.endpoint([docker_host]) -> endpoint | nil, err */
static int l_endpoint(lua_State *L) {
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

/* engine_stream.engine_error(status, body [, what]) -> err */
static int l_engine_error(lua_State *L) {
  lua_Integer status = luaL_checkinteger(L, 1);
  size_t len;
  const char *body = luaL_optlstring(L, 2, "", &len);
  const char *what = luaL_optstring(L, 3, NULL);
  lengine_push_error(L, (long)status, body, len, what);
  return 1;
}

static const luaL_Reg engine_stream_functions[] = {
    {"endpoint", l_endpoint},
    {"engine_error", l_engine_error},
    {"exec_start", lexec_start},
    {"put_archive", larchive_put},
    {"get_archive", larchive_get},
    {"save_archive", larchive_save},
    {"read_file", larchive_read_file},
    {"supervisor", lchannel_open},
    {NULL, NULL},
};

int luaopen_luagent_engine_stream(lua_State *L) {
  luaL_requiref(L, "luagent.http", luaopen_luagent_http, 0); /* the request handle class */
  luaL_requiref(L, "luagent.tar", luaopen_luagent_tar, 0);   /* the tar handle classes */
  lua_pop(L, 2);
  lexec_register(L);
  larchive_register(L);
  lchannel_register(L);
  luaL_newlib(L, engine_stream_functions);
  return 1;
}

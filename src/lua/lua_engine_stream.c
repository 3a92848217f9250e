/* lua_engine_stream: luagent.engine_stream — the raw streaming half of the Docker
 * Engine API client, assembled from its parts (lua_engine_stream.h). JSON calls
 * are plain http.request calls made by lua/luagent/engine_client.lua; what must not
 * pass through Lua strings chunk by chunk is here.
 *
 * This file is the hub: it only registers. Each function is its part's:
 *   engine_stream.endpoint / engine_error             (lua_docker_wire.c)
 *   engine_stream.exec_start(opts) -> stream          (lua_exec_stream.c)
 *   engine_stream.put_archive / get_archive / save_archive / read_file (lua_archive.c)
 *   engine_stream.supervisor(opts) -> channel | nil, err  (lua_supervisor_channel.c: the
 *       channel to the sandbox supervisor)
 *   engine_stream.egress(opts) -> egress | nil, err        (lua_egress.c: a sandbox's way
 *       out, through the supervisor's egress relay)
 * Engine errors of the streams come back as engine_error values. What the parts
 * share lives beside them (lua_docker_wire.c), never here: calls go hub -> part
 * -> helper, never back. */
#include "lua_engine_stream.h"

#include <lauxlib.h>

#include "lua_docker_wire.h"
#include "lua_http.h"
#include "lua_tar.h"

static const luaL_Reg engine_stream_functions[] = {
    {"endpoint", lwire_endpoint},
    {"engine_error", lwire_engine_error},
    {"exec_start", lexec_start},
    {"put_archive", larchive_put},
    {"get_archive", larchive_get},
    {"save_archive", larchive_save},
    {"read_file", larchive_read_file},
    {"supervisor", lchannel_open},
    {"egress", legress_open},
    {NULL, NULL},
};

int luaopen_luagent_engine_stream(lua_State *L) {
  luaL_requiref(L, "luagent.http", luaopen_luagent_http, 0); /* the request handle class */
  luaL_requiref(L, "luagent.tar", luaopen_luagent_tar, 0);   /* the tar handle classes */
  lua_pop(L, 2);
  lexec_register(L);
  larchive_register(L);
  lchannel_register(L);
  lchannel_send_register(L); /* after the class it adds to */
  legress_register(L);
  luaL_newlib(L, engine_stream_functions);
  lchannel_push_ops(L);
  return 1;
}

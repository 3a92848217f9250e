/* lua_engine_stream: the parts of luagent.engine_stream, the raw streaming half
 * of the Docker Engine API client: what each part gives the hub to register.
 * One file per job, calls going one way (hub -> parts -> helpers):
 *   lua_engine_stream.c       the hub: the module table and luaopen, nothing else
 *   lua_docker_wire.c         endpoint, engine_error, and what the parts share:
 *                             engine errors, failed transfers, output fields
 *   lua_exec_stream.c         exec_start and the exec stream handle
 *   lua_archive.c             put_archive, get_archive, save_archive, read_file
 *   lua_supervisor_channel.c  supervisor and the supervisor channel handle
 *   lua_supervisor_send.c     channel:send, the channel's requests
 *   lua_pack_sink.c           where a pack's tar stream goes (a folder, a file)
 * The engine client itself (JSON calls, versions) is lua/luagent/engine_client.lua. */
#ifndef LUAGENT_LUA_ENGINE_STREAM_H
#define LUAGENT_LUA_ENGINE_STREAM_H

#include <lua.h>

/* The parts: their module functions, and their classes' registration. */
int lexec_start(lua_State *L);
void lexec_register(lua_State *L);
int larchive_put(lua_State *L);
int larchive_get(lua_State *L);
int larchive_save(lua_State *L);
int larchive_read_file(lua_State *L);
void larchive_register(lua_State *L);
int lchannel_open(lua_State *L);
void lchannel_register(lua_State *L);
/* Adds channel:send to the class lchannel_register made. */
void lchannel_send_register(lua_State *L);
/* Sets SUPERVISOR_OPS (src/core/supervisor_ops.def) on the module table on top. */
void lchannel_push_ops(lua_State *L);
int legress_open(lua_State *L);
void legress_register(lua_State *L);

#endif

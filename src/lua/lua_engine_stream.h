/* lua_engine_stream: the parts of luagent.engine_stream, the raw streaming half of
 * the Docker Engine API client, and the little they share. One file per job:
 *   lua_engine_stream.c       the module table, endpoint, engine errors
 *   lua_exec_stream.c     exec_start and the exec stream handle
 *   lua_archive.c         put_archive, get_archive, save_archive, read_file
 *   lua_supervisor_channel.c  supervisor and the supervisor channel handle
 *   lua_supervisor_send.c     the channel's requests and a pack's sinks
 * The engine client itself (JSON calls, versions) is lua/luagent/engine_client.lua. */
#ifndef LUAGENT_LUA_ENGINE_STREAM_H
#define LUAGENT_LUA_ENGINE_STREAM_H

#include <lua.h>

#include "docker_wire.h"
#include "http.h"

/* Pushes the error for an engine answer with an error status: kind
 * not_found (404), conflict (409), else docker; fields status and
 * engine_message (docker_error_message of the body); message
 * "WHAT: Docker engine says: MSG (HTTP N)", without "WHAT: " when what is NULL. */
void lengine_push_error(lua_State *L, long status, const char *body, size_t len, const char *what);
/* For a transfer that failed: nil and the engine's error when it answered
 * with a status, else the transport failure. Returns 2. */
int lengine_push_failure(lua_State *L, http_xfer *x);
int lengine_is_success(long status);
/* Sets field `name` of the table on top to the kept output and `bytes_name`
 * to the total printed; ORs whether it was cut into *truncated. */
void lengine_set_output(lua_State *L, const capped_output *c, const char *name, const char *bytes_name,
                        int *truncated);

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

#endif

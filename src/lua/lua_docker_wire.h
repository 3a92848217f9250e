/* lua_docker_wire: the engine's answers as Lua values (the Lua face of
 * src/core/docker_wire.c), shared by every part of luagent.engine_stream —
 * lua_exec_stream.c, lua_archive.c and lua_supervisor_channel.c call these;
 * this file calls none of them. It also holds the two module functions made
 * of nothing else: endpoint and engine_error (registered by the hub,
 * lua_engine_stream.c). */
#ifndef LUAGENT_LUA_DOCKER_WIRE_H
#define LUAGENT_LUA_DOCKER_WIRE_H

#include <lua.h>

#include "attach.h"
#include "docker_wire.h"
#include "http.h"

/* Pushes the error for an engine answer with an error status: kind
 * not_found (404), conflict (409), else docker; fields status and
 * engine_message (docker_error_message of the body); message
 * "WHAT: Docker engine says: MSG (HTTP N)", without "WHAT: " when what is NULL. */
void lwire_push_error(lua_State *L, long status, const char *body, size_t len, const char *what);
/* For a transfer that failed: nil and the engine's error when it answered
 * with a status, else the transport failure. Returns 2. */
int lwire_push_failure(lua_State *L, http_xfer *x);
/* A 2xx status. */
int lwire_is_success(long status);
/* Sets field `name` of the table on top to the kept output and `bytes_name`
 * to the total printed; ORs whether it was cut into *truncated. */
void lwire_set_output(lua_State *L, const capped_output *c, const char *name, const char *bytes_name,
                      int *truncated);

/* engine_stream.endpoint([docker_host]) -> endpoint | nil, err */
int lwire_endpoint(lua_State *L);
/* engine_stream.engine_error(status, body [, what]) -> err */
int lwire_engine_error(lua_State *L);

/* The attach target from the options table at index 1 (url, or unix_socket and
 * path; TLS: insecure, ca_file, cert_file, key_file, ca_pem, cert_pem, key_pem;
 * connect_timeout; websocket: a Kubernetes exec; headers = {name = value},
 * sent with a websocket's request). When a url is made from `path` or there
 * are headers, one table keeping them is pushed (the attach copies what it
 * keeps: the table can go once it started); else nothing. */
attach_target lwire_attach_target(lua_State *L);

#endif

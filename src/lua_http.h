/* lua_http: the http binding's C side, shared by bindings that stream
 * (docker): option parsing and "start a transfer, wait, then finish". */
#ifndef LUAGENT_LUA_HTTP_H
#define LUAGENT_LUA_HTTP_H

#include <lua.h>

#include "http.h"

/* Reads url, method, headers, body, body_file, timeouts, unix_socket and TLS
 * options from the table at idx into req. Strings stay owned by that table:
 * keep it on the stack until the transfer ends. The header lines live in the
 * request object lhttp_perform creates, so call this through lhttp_perform's
 * `prepare` step, or pass headers = NULL. */
void lhttp_read_options(lua_State *L, int idx, http_request *req);

/* Pushes results for a finished transfer; returns how many. */
typedef int (*lhttp_finish_fn)(lua_State *L, http_xfer *x, void *ud);

/* Starts req (sink may be NULL: body kept in memory), waits for it — a task
 * yields, elsewhere the scheduler runs in place — and returns finish(L, x, ud).
 * Pushes a userdata that owns the transfer; ud must outlive the call (keep
 * it on the stack). The options table at opts_idx supplies the headers. */
int lhttp_perform(lua_State *L, int opts_idx, http_request *req, const http_sink *sink,
                  lhttp_finish_fn finish, void *ud);

/* For a failed transfer: pushes nil and {kind, message}; returns 2. */
int lhttp_push_failure(lua_State *L, http_xfer *x);

#endif

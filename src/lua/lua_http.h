/* lua_http: the http binding's C side, shared by bindings that stream
 * (engine_stream's archives): option parsing and "start a transfer, wait, then
 * finish", for a handle of the caller's that owns the transfer. */
#ifndef LUAGENT_LUA_HTTP_H
#define LUAGENT_LUA_HTTP_H

#include <lua.h>

#include "http.h"
#include "lua_util.h"

/* Reads url, method, headers, body, body_file, timeouts, unix_socket and TLS
 * options from the table at idx into req. Strings stay owned by that table:
 * keep it on the stack until the transfer ends. The header lines live in the
 * request object lhttp_perform creates, so call this through lhttp_perform's
 * `prepare` step, or pass headers = NULL. */
void lhttp_read_options(lua_State *L, int idx, http_request *req);
/* The TLS options of the table at idx (insecure, ca_file, cert_file,
 * key_file, ca_pem, cert_pem, key_pem); the strings stay the table's. */
void lhttp_read_tls(lua_State *L, int idx, http_tls *tls);

/* The first member of a handle that owns one lhttp_perform transfer (an
 * archive job). Its class's close, once luagent_handle_release said so,
 * calls lhttp_owner_close, which stops the transfer and wakes the task
 * waiting for it; that task then raises "<what> is closed" instead of
 * finishing. The owner must be open (luagent_handle_open) when it is given
 * to lhttp_perform. */
typedef struct lhttp_owner {
  luagent_handle handle;
  const char *what;
  struct lrequest *request; /* the running transfer (NULL before and after) */
} lhttp_owner;

/* Stops the owner's transfer and wakes its waiter (the owner is closed
 * already). Idempotent, never waits: fit for a finalizer. */
void lhttp_owner_close(lhttp_owner *owner);

/* Pushes results for a finished transfer; returns how many. */
typedef int (*lhttp_finish_fn)(lua_State *L, http_xfer *x, lhttp_owner *owner);

/* Starts req (sink may be NULL: body kept in memory) for the owner handle at
 * stack index owner_idx, waits for it — a task yields, elsewhere the
 * scheduler runs in place — and returns finish(L, x, owner). Pushes the
 * request handle that owns the transfer (it keeps the owner alive). The
 * options table at opts_idx supplies the headers. */
int lhttp_perform(lua_State *L, int opts_idx, http_request *req, const http_sink *sink,
                  lhttp_finish_fn finish, int owner_idx);

/* For a failed transfer: pushes nil and {kind, message}; returns 2. */
int lhttp_push_failure(lua_State *L, http_xfer *x);

int luaopen_luagent_http(lua_State *L);

#endif

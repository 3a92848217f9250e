/* lua_supervisor_send: channel:send, the requests to the sandbox supervisor
 * from Lua tables, encoded by src/core/supervisor_proto.c. Part of the
 * supervisor channel (lua_supervisor_channel.h): it adds this one method to
 * the channel's class and calls the channel's helpers (results, write,
 * failure) and lua_pack_sink.c; neither calls it back.
 *
 *   channel:send(op, id, fields [, opts]) -> true | nil, err
 *     op "run" | "spawn": fields {argv = {...}, env = {"NAME=value", ...}, cwd,
 *         stdin, timeout (seconds)}; stdin: the bytes, then EOF; for a spawn
 *         also true: its stdin stays open for write and eof
 *     op "write": {target (a spawn's id), data}   its end: the bytes are in the pipe
 *     op "eof": {target}                          its end: that stdin is closed
 *     op "python": {code, timeout}      op "kill": {}      op "signal": {signal}
 *     op "pack": {path, max_bytes, max_entries} (0: no limit)
 *     op "list": {path, max_entries} (0: no limit), answered by serve itself
 *     op "read": {path, max_bytes} (0: no limit)   the file as stdout (give
 *         opts.max_output above max_bytes), or an E line "<kind> <message>" and exit 2
 *     op "put": {path, data, mode (default 0644)}  exit 0, or the failure
 *         "<kind> <message>" and exit 1 (both answered by serve itself)
 *     op "watch": {path}   every X from now on carries the folder's change
 *         generation (sandbox/supervisor/watch.h); exit 0, or 1 and why not
 *     opts {max_output (bytes kept per stream, default 1 MiB), window (bytes: the
 *           channel stops reading while this much of the command's stdout waits
 *           untaken; give max_output above it, see channel:take),
 *           extract = {dest, strip, max_bytes, max_entries, limit} | save = {path, limit}}
 *         a pack's stdout goes into extract (safely, src/core/tar_extract.c) or
 *         save (a temporary file renamed at the end) instead of stdout; limit
 *         caps the tar bytes accepted (the stream comes from inside the
 *         sandbox): past it, or when extraction fails, the pack is killed.
 *   run, spawn, python, pack, list, read, put, watch, write and eof register id (> 0) for wait/take/
 *   result (a write's or eof's result: exit_code 0, or the failure why not);
 *   kill and signal target an earlier id. Bad fields raise, naming them. */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_engine_stream.h"
#include "lua_supervisor_channel.h"
#include "supervisor_proto.h"

#define PACK_STDERR_CAP (8u << 20) /* the left-out lines of a pack */

/* ---- fields from Lua ---- */

/* The list of strings at fields[name] as a NULL-terminated array (a
 * userdata on the stack, so nothing leaks when a check raises); NULL when
 * absent. The strings stay in the fields table. */
static const char **string_list(lua_State *L, int fields, const char *name) {
  int type = lua_getfield(L, fields, name);
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    lua_pushnil(L); /* keeps the stack shape */
    return NULL;
  }
  if (type != LUA_TTABLE) luaL_error(L, "send: field '%s' must be a list of strings", name);
  size_t n = lua_rawlen(L, -1);
  const char **list = lua_newuserdatauv(L, (n + 1) * sizeof *list, 0);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, -2, (lua_Integer)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "send: %s[%d] must be a string", name, (int)i + 1);
    list[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  list[n] = NULL;
  lua_remove(L, -2);
  return list;
}

static long long timeout_ms(lua_State *L, int fields) {
  lua_Number seconds = opt_number(L, fields, "timeout", 0);
  if (!(seconds >= 0) || seconds > 1e9) luaL_error(L, "send: field 'timeout' must be seconds >= 0");
  return (long long)ceil(seconds * 1000);
}

static long long count_field(lua_State *L, int fields, const char *name) {
  lua_Integer v = opt_integer(L, fields, name, 0);
  if (v < 0) luaL_error(L, "send: field '%s' must be >= 0", name);
  return (long long)v;
}

/* The request's 'path' field, which op needs (a Lua error without it). */
static const char *needed_path(lua_State *L, int fields, const char *op) {
  const char *path = opt_string(L, fields, "path", NULL, NULL);
  if (!path || !*path) luaL_error(L, "send: %s needs 'path'", op);
  return path;
}

/* A list request (sandbox/supervisor/listing.h): path, max_entries. */
static int encode_list(lua_State *L, buf *out, long long id, int fields) {
  const char *path = needed_path(L, fields, "list");
  char max[24];
  snprintf(max, sizeof max, "%lld", count_field(L, fields, "max_entries"));
  const sv_field list[] = {{SV_TAG_PATH, path, strlen(path)}, {SV_TAG_MAXENTRIES, max, strlen(max)}};
  return sv_encode(out, "list", id, list, 2);
}

/* A watch request (sandbox/supervisor/watch.h): path. */
static int encode_watch(lua_State *L, buf *out, long long id, int fields) {
  const char *path = needed_path(L, fields, "watch");
  const sv_field list[] = {{SV_TAG_PATH, path, strlen(path)}};
  return sv_encode(out, "watch", id, list, 1);
}

/* A read request (sandbox/supervisor/fileio.h): path, max_bytes. */
static int encode_read(lua_State *L, buf *out, long long id, int fields) {
  const char *path = needed_path(L, fields, "read");
  char max[24];
  snprintf(max, sizeof max, "%lld", count_field(L, fields, "max_bytes"));
  const sv_field list[] = {{SV_TAG_PATH, path, strlen(path)}, {SV_TAG_MAXBYTES, max, strlen(max)}};
  return sv_encode(out, "read", id, list, 2);
}

/* A put request (sandbox/supervisor/fileio.h): path, data, mode (absent: 0644). */
static int encode_put(lua_State *L, buf *out, long long id, int fields) {
  size_t len = 0;
  const char *path = opt_string(L, fields, "path", NULL, NULL);
  const char *data = opt_string(L, fields, "data", NULL, &len);
  if (!path || !*path || !data) luaL_error(L, "send: put needs 'path' and 'data'");
  lua_Integer mode = opt_integer(L, fields, "mode", 0644);
  if (mode < 0 || mode > 07777) luaL_error(L, "send: field 'mode' must be file mode bits 0..4095");
  char text[24];
  snprintf(text, sizeof text, "%d", (int)mode);
  const sv_field list[] = {{SV_TAG_PATH, path, strlen(path)}, {SV_TAG_MODE, text, strlen(text)},
                           {SV_TAG_STDIN, data, len}};
  return sv_encode(out, "put", id, list, len ? 3 : 2);
}

/* The stdin field of a run or spawn: its bytes (NULL: none), or true (a
 * spawn's stdin kept open: *mode set). */
static const char *stdin_field(lua_State *L, int fields, const char *op, enum sv_run_mode *mode, size_t *len) {
  *mode = op[0] == 's' ? SV_SPAWN : SV_RUN;
  *len = 0;
  int type = lua_getfield(L, fields, "stdin");
  lua_pop(L, 1);
  if (type != LUA_TBOOLEAN) return opt_string(L, fields, "stdin", NULL, len);
  lua_getfield(L, fields, "stdin");
  int keep = lua_toboolean(L, -1);
  lua_pop(L, 1);
  if (!keep || *mode != SV_SPAWN) luaL_error(L, "send: field 'stdin' must be a string (or true for a spawn)");
  *mode = SV_SPAWN_STDIN;
  return NULL;
}

static long long target_field(lua_State *L, int fields, const char *op) {
  lua_Integer target = opt_integer(L, fields, "target", 0);
  if (target < 1) luaL_error(L, "send: %s needs 'target', the id of a spawn", op);
  return (long long)target;
}

/* Encodes op into out; raises on bad fields; -1 when the encoder refuses. */
static int encode(lua_State *L, buf *out, const char *op, long long id, int fields) {
  if (strcmp(op, "run") == 0 || strcmp(op, "spawn") == 0) {
    const char **argv = string_list(L, fields, "argv");
    const char **env = string_list(L, fields, "env");
    if (!argv || !argv[0]) luaL_error(L, "send: %s needs a non-empty 'argv'", op);
    size_t stdin_len = 0;
    enum sv_run_mode mode;
    const char *cwd = opt_string(L, fields, "cwd", NULL, NULL);
    const char *input = stdin_field(L, fields, op, &mode, &stdin_len);
    return sv_encode_run(out, id, mode, argv, env, cwd, input, stdin_len, timeout_ms(L, fields));
  }
  if (strcmp(op, "write") == 0) {
    size_t len = 0;
    const char *data = opt_string(L, fields, "data", NULL, &len);
    if (!data) luaL_error(L, "send: write needs 'data'");
    return sv_encode_write(out, id, target_field(L, fields, op), data, len);
  }
  if (strcmp(op, "eof") == 0) return sv_encode_eof(out, id, target_field(L, fields, op));
  if (strcmp(op, "python") == 0) {
    size_t len = 0;
    const char *code = opt_string(L, fields, "code", NULL, &len);
    if (!code) luaL_error(L, "send: python needs 'code'");
    return sv_encode_python(out, id, code, len, timeout_ms(L, fields));
  }
  if (strcmp(op, "kill") == 0) return sv_encode_kill(out, id);
  if (strcmp(op, "signal") == 0) {
    lua_Integer signo = opt_integer(L, fields, "signal", 0);
    if (signo < 1 || signo > 64) luaL_error(L, "send: field 'signal' must be a signal number 1..64");
    return sv_encode_signal(out, id, (int)signo);
  }
  if (strcmp(op, "pack") == 0) {
    const char *path = needed_path(L, fields, "pack");
    return sv_encode_pack(out, id, path, count_field(L, fields, "max_bytes"), count_field(L, fields, "max_entries"));
  }
  if (strcmp(op, "list") == 0) return encode_list(L, out, id, fields);
  if (strcmp(op, "read") == 0) return encode_read(L, out, id, fields);
  if (strcmp(op, "put") == 0) return encode_put(L, out, id, fields);
  if (strcmp(op, "watch") == 0) return encode_watch(L, out, id, fields);
  return luaL_error(L, "send: unknown op '%s' (run, spawn, write, eof, python, kill, signal, pack, list, read, put, "
                    "watch)",
                    op);
}

/* Makes r's sink of kind (lua_pack_sink.h) from the spec on top and anchors
 * its extractor in the channel at index 1. 0, or nil, err pushed and 2. */
static int make_sink(lua_State *L, sv_result *r, int kind) {
  int n = lsink_open(L, &r->sink, kind);
  if (n || kind != LSINK_EXTRACT) return n;
  lua_getiuservalue(L, 1, CHANNEL_UV_SINKS); /* the handle lives as long as r */
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, (lua_Integer)r->id);
  lua_pop(L, 2);
  return 0;
}

/* channel:send(op, id, fields [, opts]) -> true | nil, err */
static int l_channel_send(lua_State *L) {
  sv_channel *ch = luagent_check_open(L, 1, &SUPERVISOR_CHANNEL);
  const char *op = luaL_checkstring(L, 2);
  long long id = luaL_checkinteger(L, 3);
  luaL_argcheck(L, id > 0, 3, "ids are integers > 0");
  lua_settop(L, 5);
  if (lua_isnil(L, 4)) {
    lua_newtable(L);
    lua_replace(L, 4);
  }
  luaL_checktype(L, 4, LUA_TTABLE);
  int opts = lua_istable(L, 5) ? 5 : 0;
  size_t cap = (size_t)(opts ? opt_integer(L, opts, "max_output", 1 << 20) : 1 << 20);
  size_t window = opts ? (size_t)count_field(L, opts, "window") : 0;
  if (ch->ended) return lchannel_failure(L, ch);
  int pack = strcmp(op, "pack") == 0;
  int registers = strcmp(op, "kill") != 0 && strcmp(op, "signal") != 0;
  if (registers && lchannel_find(ch, id)) return luaL_argerror(L, 3, "a command with this id was already sent");
  int sink = pack ? lsink_spec(L, opts) : LSINK_NONE;
  buf request = BUF_INIT;
  int rc = encode(L, &request, op, id, 4); /* raises before anything is allocated */
  if (rc != 0) {
    buf_free(&request);
    return luagent_fail(L, "config", "the %s request is over the supervisor's limits (fields of at most 64 MiB, "
                        "130 MiB in all, 4096 fields)", op);
  }
  if (registers) {
    sv_result *r = lchannel_add(ch, id, cap, pack ? PACK_STDERR_CAP : cap);
    if (r) r->window = window;
    int n = !r ? -1 : sink ? make_sink(L, r, sink) : 0;
    if (n != 0) {
      buf_free(&request);
      if (n < 0) return luaL_error(L, "out of memory");
      lchannel_forget(L, ch, id);
      return n;
    }
  }
  rc = lchannel_write(ch, &request);
  buf_free(&request);
  if (rc != 0) {
    if (registers) lchannel_forget(L, ch, id);
    return lchannel_failure(L, ch);
  }
  lua_pushboolean(L, 1);
  return 1;
}

void lchannel_send_register(lua_State *L) {
  static const luaL_Reg methods[] = {{"send", l_channel_send}, {NULL, NULL}};
  luagent_add_methods(L, &SUPERVISOR_CHANNEL, methods);
}

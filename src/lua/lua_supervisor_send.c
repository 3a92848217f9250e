/* lua_supervisor_send: channel:send, the requests to the sandbox supervisor
 * from Lua tables, encoded by src/core/supervisor_proto.c from the one
 * declaration of the protocol's operations, src/core/supervisor_ops.def.
 * Part of the supervisor channel (lua_supervisor_channel.h): it adds this one
 * method to the channel's class and calls the channel's helpers (results,
 * write, failure) and lua_pack_sink.c; neither calls it back.
 *
 *   channel:send(op, id, fields [, opts]) -> true | nil, err
 *     op: a name of supervisor_ops.def; fields: the op's fields by name, as
 *         their kinds take them (lists of strings, strings, numbers, true for
 *         a flag); a missing required field or a wrong value raises, naming it
 *     opts {max_output (bytes kept per stream, default 1 MiB), window (bytes: the
 *           channel stops reading while this much of the command's stdout waits
 *           untaken; give max_output above it, see channel:take),
 *           extract = {dest, strip, max_bytes, max_entries, limit} | save = {path, limit}}
 *         a pack's stdout goes into extract (safely, src/core/tar_extract.c) or
 *         save (a temporary file renamed at the end) instead of stdout; limit
 *         caps the tar bytes accepted (the stream comes from inside the
 *         sandbox): past it, or when extraction fails, the pack is killed.
 *   An op that is answered (SV_ANSWERED) registers id (> 0) for
 *   wait/take/result; kill and signal (SV_CONTROL) target an earlier id.
 *
 *   engine_stream.SUPERVISOR_OPS -> {NAME = {answered = bool, fields = {name, ...},
 *       required = {name = true, ...}}}   the declaration, for luagent.sandbox.supervisor */
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_engine_stream.h"
#include "lua_supervisor_channel.h"
#include "supervisor_proto.h"

#define PACK_STDERR_CAP (8u << 20) /* the left-out lines of a pack */

/* ---- fields from Lua, by their declared kind ---- */

/* The list of strings at fields[name] as a NULL-terminated array (a
 * userdata on the stack, so nothing leaks when a check raises). The strings
 * stay in the fields table. */
static const char **string_list(lua_State *L, int fields, const char *name, size_t *count) {
  luaL_checktype(L, -1, LUA_TTABLE);
  size_t n = lua_rawlen(L, -1);
  const char **list = lua_newuserdatauv(L, (n + 1) * sizeof *list, 0);
  for (size_t i = 0; i < n; i++) {
    lua_rawgeti(L, -2, (lua_Integer)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "send: %s[%d] must be a string", name, (int)i + 1);
    list[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  list[n] = NULL;
  *count = n;
  (void)fields;
  return list;
}

/* fields[f->name] into v; what it pushes stays on the stack until the request is encoded. */
static void read_value(lua_State *L, int fields, const sv_field_spec *f, sv_value *v) {
  int type = lua_getfield(L, fields, f->name);
  memset(v, 0, sizeof *v);
  if (type == LUA_TNIL) return;
  v->present = 1;
  switch (f->kind) {
  case SVF_STRINGS:
  case SVF_ENV:
    if (type != LUA_TTABLE) luaL_error(L, "send: field '%s' must be a list of strings", f->name);
    v->list = string_list(L, fields, f->name, &v->count);
    return;
  case SVF_STRING:
  case SVF_BYTES:
    if (type != LUA_TSTRING) luaL_error(L, "send: field '%s' must be a string", f->name);
    v->data = lua_tolstring(L, -1, &v->len);
    return;
  case SVF_FLAG:
    v->flag = lua_toboolean(L, -1);
    return;
  default:
    if (type != LUA_TNUMBER) luaL_error(L, "send: field '%s' must be a number", f->name);
    v->number = lua_tonumber(L, -1);
  }
}

/* Encodes op into out; raises on a missing or wrong field; 0, or -2 when the
 * request is over the supervisor's limits. */
static int encode(lua_State *L, buf *out, const sv_op_spec *op, long long id, int fields) {
  const sv_field_spec *specs[SV_MAX_OP_FIELDS];
  int required[SV_MAX_OP_FIELDS];
  sv_value values[SV_MAX_OP_FIELDS];
  size_t n = sv_op_fields(op, specs, required, SV_MAX_OP_FIELDS);
  int top = lua_gettop(L);
  luaL_checkstack(L, (int)n * 2 + 4, "send");
  for (size_t i = 0; i < n; i++) read_value(L, fields, specs[i], &values[i]);
  const char *why = NULL;
  int rc = sv_encode_op(out, op, id, values, &why); /* the values live on the stack until here */
  if (rc == -1) return luaL_error(L, "send: %s", why);
  lua_settop(L, top);
  return rc;
}

static const sv_op_spec *check_op(lua_State *L, int idx) {
  const char *name = luaL_checkstring(L, idx);
  const sv_op_spec *op = sv_op_find(name);
  if (op) return op;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (const sv_op_spec *o = SV_OPS; o->name; o++) {
    if (o != SV_OPS) luaL_addstring(&b, ", ");
    luaL_addstring(&b, o->name);
  }
  luaL_pushresult(&b);
  return luaL_error(L, "send: unknown op '%s' (%s)", name, lua_tostring(L, -1)), NULL;
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
  const sv_op_spec *op = check_op(L, 2);
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
  lua_Integer window = opts ? opt_integer(L, opts, "window", 0) : 0;
  luaL_argcheck(L, window >= 0, 5, "window must be >= 0");
  if (ch->ended) return lchannel_failure(L, ch);
  int pack = strcmp(op->name, "pack") == 0;
  int registers = op->answer == SV_ANSWERED;
  if (registers && lchannel_find(ch, id)) return luaL_argerror(L, 3, "a command with this id was already sent");
  int sink = pack ? lsink_spec(L, opts) : LSINK_NONE;
  buf request = BUF_INIT;
  int rc = encode(L, &request, op, id, 4); /* raises before anything is allocated */
  if (rc != 0) {
    buf_free(&request);
    return luagent_fail(L, "config", "the %s request is over the supervisor's limits (fields of at most 64 MiB, "
                        "130 MiB in all, 4096 fields)", op->name);
  }
  if (registers) {
    sv_result *r = lchannel_add(ch, id, cap, pack ? PACK_STDERR_CAP : cap);
    if (r) r->window = (size_t)window;
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

/* engine_stream.SUPERVISOR_OPS, made from supervisor_ops.def, into the table on top. */
void lchannel_push_ops(lua_State *L) {
  lua_newtable(L);
  for (const sv_op_spec *op = SV_OPS; op->name; op++) {
    const sv_field_spec *specs[SV_MAX_OP_FIELDS];
    int required[SV_MAX_OP_FIELDS];
    size_t n = sv_op_fields(op, specs, required, SV_MAX_OP_FIELDS);
    lua_createtable(L, 0, 3);
    set_boolean(L, "answered", op->answer == SV_ANSWERED);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
      lua_pushstring(L, specs[i]->name);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "fields");
    lua_newtable(L);
    for (size_t i = 0; i < n; i++) set_boolean(L, specs[i]->name, required[i]);
    lua_setfield(L, -2, "required");
    lua_setfield(L, -2, op->name);
  }
  lua_setfield(L, -2, "SUPERVISOR_OPS");
}

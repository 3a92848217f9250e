/* lua_tar_check: tar.checker, a stream check for a tar that another tar
 * extracts (src/core/tar_check.c): luagent.sandbox's fork passes a
 * workspace's stream on to its forks only after it passed here.
 *
 *   tar.checker{strip, max_bytes, max_entries} -> checker
 *     checker:feed(data) -> true | nil, err   err kind "refused" (the first entry
 *         refused: its name and why) or "tar" (a malformed stream); every later
 *         feed fails the same way
 *     checker:finish() -> {bytes, entries} | nil, err   the stream ended whole
 *     checker:close()   (also <close> and __gc; idempotent)
 * Part of luagent.tar: lua_tar.c registers it. */
#include <lauxlib.h>

#include "lua_tar.h"
#include "lua_util.h"

typedef struct checker {
  luagent_handle handle;
  tar_check *c;
} checker;

static int checker_close(lua_State *L);
static int l_feed(lua_State *L);
static int l_finish(lua_State *L);
static const luaL_Reg METHODS[] = {{"feed", l_feed}, {"finish", l_finish}, {NULL, NULL}};
static const luagent_handle_class CHECKER = {"luagent.tar.checker", "tar checker", METHODS, checker_close, NULL};

static int checker_close(lua_State *L) {
  checker *b = luagent_check_handle(L, 1, &CHECKER);
  if (!luagent_handle_release(b)) return 0;
  tar_check_free(b->c);
  b->c = NULL;
  return 0;
}

static int failed(lua_State *L, checker *b) {
  const char *why = tar_check_error(b->c);
  return luagent_fail(L, tar_check_refused(b->c) ? "refused" : "tar", "%s", why);
}

/* checker:feed(data) -> true | nil, err */
static int l_feed(lua_State *L) {
  checker *b = luagent_check_open(L, 1, &CHECKER);
  size_t n;
  const char *data = luaL_checklstring(L, 2, &n);
  if (tar_check_feed(b->c, data, n) != 0) return failed(L, b);
  lua_pushboolean(L, 1);
  return 1;
}

/* checker:finish() -> {bytes, entries} | nil, err */
static int l_finish(lua_State *L) {
  checker *b = luagent_check_open(L, 1, &CHECKER);
  if (tar_check_finish(b->c) != 0) return failed(L, b);
  lua_createtable(L, 0, 2);
  lua_pushinteger(L, (lua_Integer)tar_check_bytes(b->c));
  lua_setfield(L, -2, "bytes");
  lua_pushinteger(L, (lua_Integer)tar_check_entries(b->c));
  lua_setfield(L, -2, "entries");
  return 1;
}

/* tar.checker{strip, max_bytes, max_entries} -> checker | nil, err */
int ltar_checker(lua_State *L) {
  int opts = lua_istable(L, 1) ? 1 : 0;
  const char *strip = opts ? opt_string(L, opts, "strip", NULL, NULL) : NULL;
  lua_Integer max_bytes = opts ? opt_integer(L, opts, "max_bytes", 0) : 0;
  lua_Integer max_entries = opts ? opt_integer(L, opts, "max_entries", 0) : 0;
  luaL_argcheck(L, max_bytes >= 0 && max_entries >= 0, 1, "max_bytes and max_entries are >= 0");
  checker *b = luagent_new_handle(L, &CHECKER, sizeof *b, 0);
  char err[300];
  b->c = tar_check_new(strip, (long long)max_bytes, (size_t)max_entries, err, sizeof err);
  if (!b->c) return luagent_fail(L, "config", "tar.checker: %s", err);
  luagent_handle_open(b);
  return 1;
}

void ltar_checker_register(lua_State *L) { luagent_register_handle(L, &CHECKER); }

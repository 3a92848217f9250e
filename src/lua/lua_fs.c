/* lua_fs: luagent.fs — host files.
 *
 *   fs.read(path)                 -> string | nil, err
 *   fs.write(path, data [, mode]) -> true | nil, err   atomic (temp file + rename)
 *   fs.append(path, data)         -> true | nil, err
 *   fs.exists(path)               -> boolean
 *   fs.stat(path)                 -> {type, size, mode, mtime} | nil, err  (links not followed)
 *   fs.mkdir(path)                -> true | nil, err   mkdir -p
 *   fs.list(dir)                  -> {name...} sorted | nil, err
 *   fs.walk(dir)                  -> {{path, type, size}...} depth-first, sorted | nil, err
 *   fs.temp_dir([prefix])         -> path | nil, err
 *   fs.remove(path)               -> true | nil, err   rm -rf, never follows links
 *   fs.realpath(path)             -> absolute path | nil, err
 *
 * err = {kind = "not_found" | "permission" | "exists" | "io", message, path}. */
#include <errno.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "lua_util.h"

static const char *kind_of_errno(int e) {
  switch (e) {
    case ENOENT: case ENOTDIR: return "not_found";
    case EACCES: case EPERM: case EROFS: return "permission";
    case EEXIST: return "exists";
    default: return "io";
  }
}

static int fail_errno(lua_State *L, const char *what, const char *path) {
  int e = errno;
  luagent_fail(L, kind_of_errno(e), "%s %s: %s", what, path, strerror(e));
  luagent_error_set_string(L, "path", path);
  return 2;
}

static int ok(lua_State *L) {
  lua_pushboolean(L, 1);
  return 1;
}

static int l_read(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  buf b = BUF_INIT;
  if (fs_read_file(path, &b, NULL, 0) != 0) {
    buf_free(&b);
    return fail_errno(L, "cannot read", path);
  }
  lua_pushlstring(L, b.data ? b.data : "", b.len);
  buf_free(&b);
  return 1;
}

static int l_write(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  int mode = (int)luaL_optinteger(L, 3, 0644);
  if (fs_write_atomic(path, data, len, mode) != 0) return fail_errno(L, "cannot write", path);
  return ok(L);
}

static int l_append(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  size_t len;
  const char *data = luaL_checklstring(L, 2, &len);
  if (fs_append(path, data, len) != 0) return fail_errno(L, "cannot append to", path);
  return ok(L);
}

static int l_exists(lua_State *L) {
  struct stat st;
  lua_pushboolean(L, lstat(luaL_checkstring(L, 1), &st) == 0);
  return 1;
}

static void push_stat(lua_State *L, const struct stat *st) {
  lua_createtable(L, 0, 4);
  lua_pushstring(L, fs_type_name(st->st_mode));
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st->st_size);
  lua_setfield(L, -2, "size");
  lua_pushinteger(L, (lua_Integer)(st->st_mode & 07777));
  lua_setfield(L, -2, "mode");
  lua_pushinteger(L, (lua_Integer)st->st_mtime);
  lua_setfield(L, -2, "mtime");
}

static int l_stat(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  struct stat st;
  if (lstat(path, &st) != 0) return fail_errno(L, "cannot stat", path);
  push_stat(L, &st);
  return 1;
}

static int l_mkdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (fs_mkdir_p(path, (int)luaL_optinteger(L, 2, 0755)) != 0)
    return fail_errno(L, "cannot create directory", path);
  return ok(L);
}

static int l_list(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  char **names = fs_list(dir);
  if (!names) return fail_errno(L, "cannot list", dir);
  lua_newtable(L);
  int i = 0;
  for (char **p = names; *p; p++) {
    lua_pushstring(L, *p);
    lua_rawseti(L, -2, ++i);
  }
  fs_free_names(names);
  return 1;
}

typedef struct walk_ctx {
  lua_State *L;
  int list;
  lua_Integer n;
} walk_ctx;

static int add_entry(const char *rel, const struct stat *st, void *ctx) {
  walk_ctx *w = ctx;
  lua_State *L = w->L;
  push_stat(L, st);
  lua_pushstring(L, rel);
  lua_setfield(L, -2, "path");
  lua_rawseti(L, w->list, ++w->n);
  return 0;
}

static int l_walk(lua_State *L) {
  const char *dir = luaL_checkstring(L, 1);
  lua_newtable(L);
  walk_ctx w = {L, lua_gettop(L), 0};
  if (fs_walk(dir, add_entry, &w) != 0) return fail_errno(L, "cannot walk", dir);
  return 1;
}

static int l_temp_dir(lua_State *L) {
  char path[PATH_MAX];
  if (fs_temp_dir(luaL_optstring(L, 1, "luagent"), path, sizeof path) != 0)
    return fail_errno(L, "cannot create a temporary directory in", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  lua_pushstring(L, path);
  return 1;
}

static int l_remove(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  if (fs_remove_tree(path) != 0) return fail_errno(L, "cannot remove", path);
  return ok(L);
}

static int l_realpath(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char out[PATH_MAX];
  if (!realpath(path, out)) return fail_errno(L, "cannot resolve", path);
  lua_pushstring(L, out);
  return 1;
}

int luaopen_luagent_fs(lua_State *L) {
  static const luaL_Reg funcs[] = {
      {"read", l_read},   {"write", l_write}, {"append", l_append},     {"exists", l_exists},
      {"stat", l_stat},   {"mkdir", l_mkdir}, {"list", l_list},         {"walk", l_walk},
      {"temp_dir", l_temp_dir}, {"remove", l_remove}, {"realpath", l_realpath}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}

/* lua_tar: luagent.tar — tar files on the host, never whole in memory.
 *
 *   tar.write(tar_path, entries [, {uid, gid}]) -> bytes | nil, err
 *       entries: {name, file = host_path} | {name, data [, mode]} | {name, dir = true}
 *                | {name, symlink = target}; parent directories are added
 *   tar.extract(tar_path, dest [, {strip = "prefix", max_bytes, max_entries}]) -> report | nil, err
 *       report = {files = {{path, size}...}, refused = {{name, reason}...}, bytes}
 *       Absolute names, "..", links leaving dest, devices and fifos are refused
 *       (and listed); nothing is ever written outside dest.
 *   tar.stream(entries [, {uid, gid}]) -> reader | nil, err   entries as tar.write's
 *       the tar made as it is read, nothing written to disk: files are read a
 *       chunk at a time while it streams, never whole
 *     reader:read(n) -> bytes | nil (the end) | nil, err   the next at most n
 *         bytes (n >= 1; at most 64 MiB a call); err kind io names the file and
 *         why (it vanished, or its size changed since tar.stream)
 *     reader:size() -> bytes   the whole stream's length, known at once
 *     reader:close()   (also <close> and __gc; idempotent)
 *   tar.checker{strip, max_bytes, max_entries} -> checker   (lua_tar_check.c)
 * The writer and extractor live in handles (lua_tar.h) that each call
 * closes when done; a forgotten one is closed by the GC. */
#include "lua_tar.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lua_util.h"

#define STREAM_READ_MAX (64 << 20) /* bytes one reader:read gives at most */

static int writer_close(lua_State *L);
static int extract_close(lua_State *L);
static int l_stream_read(lua_State *L);
static int l_stream_size(lua_State *L);
static const luaL_Reg NO_METHODS[] = {{NULL, NULL}};
static const luaL_Reg STREAM_METHODS[] = {{"read", l_stream_read}, {"size", l_stream_size}, {NULL, NULL}};
/* tar.stream's reader is the writer handle: tar.write and engine_stream's
 * archives use the same one inside a call, without its methods. */
static const luagent_handle_class WRITER = {"luagent.tar.writer", "tar writer", STREAM_METHODS, writer_close, NULL};
static const luagent_handle_class EXTRACT = {"luagent.tar.extract", "tar extractor", NO_METHODS, extract_close,
                                             NULL};

void ltar_writer_close(ltar_writer *b) {
  if (!luagent_handle_release(b)) return;
  tar_writer_free(b->w);
  b->w = NULL;
}

void ltar_extract_close(ltar_extract *b) {
  if (!luagent_handle_release(b)) return;
  tar_extract_free(b->x);
  b->x = NULL;
}

static int writer_close(lua_State *L) {
  ltar_writer_close(luagent_check_handle(L, 1, &WRITER));
  return 0;
}

static int extract_close(lua_State *L) {
  ltar_extract_close(luagent_check_handle(L, 1, &EXTRACT));
  return 0;
}

tar_writer *ltar_writer_check(lua_State *L, const ltar_writer *b) {
  if (b->handle.closed) luaL_error(L, "%s is closed", WRITER.what);
  return b->w;
}

tar_extract *ltar_extract_check(lua_State *L, const ltar_extract *b) {
  if (b->handle.closed) luaL_error(L, "%s is closed", EXTRACT.what);
  return b->x;
}

static int add_entry(lua_State *L, tar_writer *w, int entry, char *err, size_t errlen) {
  const char *name = opt_string(L, entry, "name", NULL, NULL);
  if (!name) return snprintf(err, errlen, "a tar entry has no 'name'"), -1;
  const char *file = opt_string(L, entry, "file", NULL, NULL);
  size_t len;
  const char *data = opt_string(L, entry, "data", NULL, &len);
  const char *target = opt_string(L, entry, "symlink", NULL, NULL);
  unsigned mode = (unsigned)opt_integer(L, entry, "mode", 0);
  if (file) return tar_writer_add_file(w, name, file, err, errlen);
  if (data) return tar_writer_add_data(w, name, data, len, mode ? mode : 0644, err, errlen);
  if (target) return tar_writer_add_symlink(w, name, target, err, errlen);
  if (opt_boolean(L, entry, "dir", 0)) return tar_writer_add_dir(w, name, mode ? mode : 0755, err, errlen);
  snprintf(err, errlen, "tar entry '%s' needs one of file, data, dir or symlink", name);
  return -1;
}

ltar_writer *ltar_writer_from_entries(lua_State *L, int idx, unsigned uid, unsigned gid) {
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  ltar_writer *b = luagent_new_handle(L, &WRITER, sizeof *b, 0);
  b->w = tar_writer_new(uid, gid);
  if (!b->w) luaL_error(L, "out of memory");
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    char err[512];
    errno = 0; /* only a source file that is missing makes it not_found */
    int rc = lua_istable(L, -1) ? add_entry(L, b->w, lua_gettop(L), err, sizeof err)
                                : (snprintf(err, sizeof err, "tar entry %d is not a table", (int)i), -1);
    lua_pop(L, 1);
    if (rc != 0) {
      luagent_fail(L, errno == ENOENT ? "not_found" : "bad_entry", "%s", err);
      return NULL; /* never opened: its __gc frees the writer */
    }
  }
  luagent_handle_open(b);
  return b;
}

void ltar_push_report(lua_State *L, const tar_extract *x) {
  lua_createtable(L, 0, 3);
  size_t n = tar_extract_file_count(x);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, tar_extract_file_path(x, i));
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, (lua_Integer)tar_extract_file_size(x, i));
    lua_setfield(L, -2, "size");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "files");
  n = tar_extract_refused_count(x);
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, tar_extract_refused_name(x, i));
    lua_setfield(L, -2, "name");
    lua_pushstring(L, tar_extract_refused_reason(x, i));
    lua_setfield(L, -2, "reason");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "refused");
  lua_pushinteger(L, (lua_Integer)tar_extract_bytes(x));
  lua_setfield(L, -2, "bytes");
}

ltar_extract *ltar_extract_new(lua_State *L, const char *dest, int opts) {
  const char *strip = opts ? opt_string(L, opts, "strip", NULL, NULL) : NULL;
  long long max_bytes = opts ? (long long)opt_integer(L, opts, "max_bytes", 0) : 0;
  size_t max_entries = opts ? (size_t)opt_integer(L, opts, "max_entries", 0) : 0;
  ltar_extract *b = luagent_new_handle(L, &EXTRACT, sizeof *b, 0);
  char err[512];
  b->x = tar_extract_new(dest, strip, err, sizeof err);
  if (!b->x) {
    luagent_fail(L, "io", "%s", err);
    return NULL;
  }
  tar_extract_set_limits(b->x, max_bytes, max_entries);
  luagent_handle_open(b);
  return b;
}

static int write_fd(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    p += w, n -= (size_t)w;
  }
  return 0;
}

/* The numeric owner of every entry, from the options {uid, gid} at idx (0 when absent). */
static void owner_option(lua_State *L, int idx, unsigned *uid, unsigned *gid) {
  int opts = lua_istable(L, idx);
  *uid = opts ? (unsigned)opt_integer(L, idx, "uid", 0) : 0;
  *gid = opts ? (unsigned)opt_integer(L, idx, "gid", 0) : 0;
}

/* tar.write(tar_path, entries [, {uid, gid}]) -> bytes | nil, err */
static int l_write(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  unsigned uid, gid;
  owner_option(L, 3, &uid, &gid);
  ltar_writer *b = ltar_writer_from_entries(L, 2, uid, gid);
  if (!b) return 2;
  tar_writer *w = b->w;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return luagent_fail(L, "io", "cannot create %s: %s", path, strerror(errno));
  char chunk[65536];
  size_t n;
  long long total = 0;
  while ((n = tar_writer_read(w, chunk, sizeof chunk)) != 0) {
    if (n == (size_t)-1 || write_fd(fd, chunk, n) != 0) {
      int saved = errno;
      close(fd);
      unlink(path);
      if (n == (size_t)-1) luagent_fail(L, "io", "%s", tar_writer_error(w));
      else luagent_fail(L, "io", "cannot write %s: %s", path, strerror(saved));
      ltar_writer_close(b);
      return 2;
    }
    total += (long long)n;
  }
  ltar_writer_close(b);
  if (close(fd) != 0) return luagent_fail(L, "io", "cannot write %s: %s", path, strerror(errno));
  lua_pushinteger(L, (lua_Integer)total);
  return 1;
}

/* tar.stream(entries [, {uid, gid}]) -> reader | nil, err */
static int l_stream(lua_State *L) {
  unsigned uid, gid;
  owner_option(L, 2, &uid, &gid);
  return ltar_writer_from_entries(L, 1, uid, gid) ? 1 : 2;
}

/* reader:read(n) -> bytes | nil (the end) | nil, err */
static int l_stream_read(lua_State *L) {
  ltar_writer *b = luagent_check_open(L, 1, &WRITER);
  lua_Integer n = luaL_checkinteger(L, 2);
  luaL_argcheck(L, n >= 1, 2, "a byte count >= 1");
  luaL_Buffer out;
  char *dst = luaL_buffinitsize(L, &out, n < STREAM_READ_MAX ? (size_t)n : STREAM_READ_MAX);
  size_t got = tar_writer_read(b->w, dst, n < STREAM_READ_MAX ? (size_t)n : STREAM_READ_MAX);
  if (got == (size_t)-1) return luagent_fail(L, "io", "tar.stream: %s", tar_writer_error(b->w));
  if (got == 0) {
    lua_pushnil(L);
    return 1;
  }
  luaL_pushresultsize(&out, got);
  return 1;
}

/* reader:size() -> bytes */
static int l_stream_size(lua_State *L) {
  ltar_writer *b = luagent_check_open(L, 1, &WRITER);
  lua_pushinteger(L, (lua_Integer)tar_writer_size(b->w));
  return 1;
}

/* tar.extract(tar_path, dest [, {strip}]) -> report | nil, err */
static int l_extract(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  const char *dest = luaL_checkstring(L, 2);
  int opts = lua_istable(L, 3) ? 3 : 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return luagent_fail(L, errno == ENOENT ? "not_found" : "io", "cannot open %s: %s", path, strerror(errno));
  ltar_extract *b = ltar_extract_new(L, dest, opts);
  if (!b) {
    close(fd);
    return 2;
  }
  tar_extract *x = b->x;
  char chunk[65536];
  ssize_t got;
  int rc = 0;
  while (rc == 0 && (got = read(fd, chunk, sizeof chunk)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    rc = tar_extract_feed(x, chunk, (size_t)got);
  }
  close(fd);
  if (rc == 0) rc = tar_extract_finish(x);
  if (rc != 0)
    luagent_fail(L, "tar", "%s: %s", path, tar_extract_error(x));
  else
    ltar_push_report(L, x);
  ltar_extract_close(b);
  return rc != 0 ? 2 : 1;
}

int luaopen_luagent_tar(lua_State *L) {
  static const luaL_Reg funcs[] = {{"write", l_write}, {"stream", l_stream}, {"extract", l_extract},
                                   {"checker", ltar_checker}, {NULL, NULL}};
  luagent_register_handle(L, &WRITER);
  ltar_checker_register(L);
  luagent_register_handle(L, &EXTRACT);
  luaL_newlib(L, funcs);
  return 1;
}

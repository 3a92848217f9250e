/* lua_tar: tar entries from Lua tables, and extraction reports as tables;
 * shared by luagent.tar (host files) and luagent.engine_stream (archive endpoints). */
#ifndef LUAGENT_LUA_TAR_H
#define LUAGENT_LUA_TAR_H

#include <lua.h>

#include "lua_util.h"
#include "tar.h"

/* Handles owning a tar writer or extractor for the length of one call
 * (tar.write, tar.extract, engine_stream's archives). Closing one (close,
 * <close>, __gc: idempotent) frees what it owns; a stream still reading
 * from it must check `handle.closed` (or call ltar_*_check). */
typedef struct ltar_writer {
  luagent_handle handle;
  tar_writer *w;
} ltar_writer;

typedef struct ltar_extract {
  luagent_handle handle;
  tar_extract *x;
} ltar_extract;

/* Builds a writer from the list at idx: {name = "input/x.csv", file = host_path}
 * | {name, data = string [, mode]} | {name, dir = true [, mode]} | {name, symlink = target}.
 * Pushes its handle; on a bad entry pushes nil, err after it and returns NULL
 * (the handle, never opened, is freed by its __gc). */
ltar_writer *ltar_writer_from_entries(lua_State *L, int idx, unsigned uid, unsigned gid);
/* Pushes {files = {{path, size}...}, refused = {{name, reason}...}, bytes}. */
void ltar_push_report(lua_State *L, const tar_extract *x);
/* Pushes the handle of a new extractor into dest, with strip, max_bytes and
 * max_entries read from the options table at opts (0: none); on failure
 * pushes nil, err after it and returns NULL (the handle is never opened). */
ltar_extract *ltar_extract_new(lua_State *L, const char *dest, int opts);
/* The writer / extractor of an open handle; raises "tar writer is closed" /
 * "tar extractor is closed". */
tar_writer *ltar_writer_check(lua_State *L, const ltar_writer *b);
tar_extract *ltar_extract_check(lua_State *L, const ltar_extract *b);
/* Idempotent closes, for the handles that own these (never wait). */
void ltar_writer_close(ltar_writer *b);
void ltar_extract_close(ltar_extract *b);

/* tar.checker and its class (lua_tar_check.c). */
int ltar_checker(lua_State *L);
void ltar_checker_register(lua_State *L);

int luaopen_luagent_tar(lua_State *L);

#endif

/* lua_tar: tar entries from Lua tables, and extraction reports as tables;
 * shared by luagent.tar (host files) and luagent.engine_io (archive endpoints). */
#ifndef LUAGENT_LUA_TAR_H
#define LUAGENT_LUA_TAR_H

#include <lua.h>

#include "tar.h"

/* Builds a writer from the list at idx: {name = "input/x.csv", file = host_path}
 * | {name, data = string [, mode]} | {name, dir = true [, mode]} | {name, symlink = target}.
 * On a bad entry pushes nil, err and returns NULL. The writer is owned by a
 * userdata pushed on the stack (freed by the GC). */
tar_writer *ltar_writer_from_entries(lua_State *L, int idx, unsigned uid, unsigned gid);
/* Pushes {files = {{path, size}...}, refused = {{name, reason}...}, bytes}. */
void ltar_push_report(lua_State *L, const tar_extract *x);
/* Creates a tar_extract owned by a userdata pushed on the stack, with strip,
 * max_bytes and max_entries read from the options table at opts (0: none);
 * on failure pushes nil, err and returns NULL. */
tar_extract *ltar_extract_new(lua_State *L, const char *dest, int opts);

int luaopen_luagent_tar(lua_State *L);

#endif

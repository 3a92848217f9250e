/* lua_util: small helpers every binding shares — option fields and handle
 * classes. Error values are lua_errors.h; the cooperative wait (wait_slot,
 * `sched_await`, sched_check_cancelled) that makes a waiting C primitive
 * yield inside a task and block elsewhere is the scheduler's, sched.h,
 * included here so every binding has it. */
#ifndef LUAGENT_LUA_UTIL_H
#define LUAGENT_LUA_UTIL_H

#include <lauxlib.h>
#include <lua.h>
#include <stddef.h>

#include "lua_errors.h"
#include "sched.h"

/* Option fields of a table argument at index `t`; a wrong type raises an
 * error naming the field. */
const char *opt_string(lua_State *L, int t, const char *field, const char *def, size_t *len);
lua_Number opt_number(lua_State *L, int t, const char *field, lua_Number def);
lua_Integer opt_integer(lua_State *L, int t, const char *field, lua_Integer def);
int opt_boolean(lua_State *L, int t, const char *field, int def);
/* Pushes field `field` if it is a function (returns 1), else pushes nothing. */
int opt_function(lua_State *L, int t, const char *field);

/* Fields of the table on top of the stack (a result being built). */
void set_string(lua_State *L, const char *field, const char *value);
void set_integer(lua_State *L, const char *field, lua_Integer value);
void set_boolean(lua_State *L, const char *field, int value);

/* Creates the metatable `name` with methods and metamethods from `methods`
 * (entries starting "__" are metamethods, the rest go to __index). For
 * classes that are not handles (a parser, a sentinel); handles use
 * luagent_register_handle. */
void luagent_new_class(lua_State *L, const char *name, const luaL_Reg *methods);

/* ---- handles (STYLE.md: "Handles are full userdata ... one idempotent close") ----
 *
 * A handle's C struct starts with a luagent_handle, so one helper can tell a
 * closed handle from an open one. Its class is registered once with
 * luagent_register_handle: `close` is bound to the close method, __close and
 * __gc (it must be idempotent and must not wait or do I/O: a finalizer runs
 * at any time), and every method that needs an open handle starts with
 * luagent_check_open, which raises "<what> is closed".
 *
 * Handles are born closed (as liolib's newprefile): luagent_new_handle makes
 * one that counts as closed until its constructor, fully done, calls
 * luagent_handle_open. A constructor that fails half way (returns nil, err,
 * or raises) therefore closes nothing by hand: it leaves a handle nobody
 * can use, and its __gc frees whatever it already holds. So every close
 * starts with luagent_handle_release, true once — for an open handle's first
 * close, and for a half-built one's collection alike — and frees what is
 * there (pointers still NULL, buffers still empty); a constructor first sets
 * up what a close reads (timers, wait slots, fds = -1) before anything that
 * can raise. */
typedef struct luagent_handle {
  int closed;   /* not usable: from birth until luagent_handle_open, and after close */
  int released; /* its close ran: what it held is freed */
} luagent_handle;

typedef struct luagent_handle_class {
  const char *name;        /* metatable name, e.g. "luagent.engine_stream.exec_stream" */
  const char *what;        /* how messages name it: "exec stream" */
  const luaL_Reg *methods; /* methods, and metamethods other than __gc/__close/__tostring */
  lua_CFunction close;     /* idempotent; sets handle.closed */
  lua_CFunction tostring;  /* may be NULL: "<what> (open|closed)" */
} luagent_handle_class;

void luagent_register_handle(lua_State *L, const luagent_handle_class *c);
/* Adds methods to a registered class from a file other than its own (the
 * supervisor channel's send), so that file calls the class's file and never
 * the other way round. */
void luagent_add_methods(lua_State *L, const luagent_handle_class *c, const luaL_Reg *methods);
/* Creates a userdata of `size` bytes (zeroed, but closed: not yet usable)
 * with nuv user values and the class's metatable; pushes it. */
void *luagent_new_handle(lua_State *L, const luagent_handle_class *c, size_t size, int nuv);
/* The last step of a constructor: the handle h (its luagent_handle) is
 * built and open. */
void luagent_handle_open(void *h);
/* The first step of every close of h (close, __close, __gc, an owner's):
 * 1 the first time — h is closed from now on and the caller frees what it
 * holds, whether h was open or left half-built — then 0. */
int luagent_handle_release(void *h);
/* The handle at idx, open or closed (argument error if it is not one). */
void *luagent_check_handle(lua_State *L, int idx, const luagent_handle_class *c);
/* The handle at idx; raises "<what> is closed" if it is. */
void *luagent_check_open(lua_State *L, int idx, const luagent_handle_class *c);

#endif

/* lua_util: small helpers every binding shares — error values, option
 * fields, and the cooperative wait (`host_await`) that makes a waiting C
 * primitive yield inside a task and block elsewhere. */
#ifndef LUAGENT_LUA_UTIL_H
#define LUAGENT_LUA_UTIL_H

#include <lauxlib.h>
#include <lua.h>
#include <stddef.h>

typedef struct task task;

/* One pending operation a task can wait for. The operation calls
 * wait_slot_complete() when it finishes; `cancel` aborts it (may be NULL). */
typedef struct wait_slot {
  task *task;
  int done;
  int cancelled;
  void (*cancel)(struct wait_slot *slot);
} wait_slot;

void wait_slot_init(wait_slot *slot, void (*cancel)(wait_slot *slot));
void wait_slot_complete(wait_slot *slot);

/* Waits until slot->done, then continues in k(L, status, ctx). Inside a task
 * this yields to the scheduler; elsewhere it drives the scheduler in place.
 * The continuation must begin with luagent_check_cancelled(L, slot). */
int host_await(lua_State *L, wait_slot *slot, lua_KContext ctx, lua_KFunction k);
/* Raises {kind = "cancelled"} if the wait was cancelled (Ctrl-C, task:cancel()). */
void luagent_check_cancelled(lua_State *L, const wait_slot *slot);

/* Pushes an error value: a table {kind, message} with the luagent.error
 * metatable (tostring gives "kind: message"). */
void luagent_push_error(lua_State *L, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Pushes nil and an error value; returns 2, for `return luagent_fail(...)`. */
int luagent_fail(lua_State *L, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets field `key` of the error table on top of the stack. */
void luagent_error_set_string(lua_State *L, const char *key, const char *value);
void luagent_error_set_integer(lua_State *L, const char *key, lua_Integer value);

/* Option fields of a table argument at index `t`; a wrong type raises an
 * error naming the field. */
const char *opt_string(lua_State *L, int t, const char *field, const char *def, size_t *len);
lua_Number opt_number(lua_State *L, int t, const char *field, lua_Number def);
lua_Integer opt_integer(lua_State *L, int t, const char *field, lua_Integer def);
int opt_boolean(lua_State *L, int t, const char *field, int def);
/* Pushes field `field` if it is a function (returns 1), else pushes nothing. */
int opt_function(lua_State *L, int t, const char *field);

/* Creates the metatable `name` with methods and metamethods from `methods`
 * (entries starting "__" are metamethods, the rest go to __index). */
void luagent_new_class(lua_State *L, const char *name, const luaL_Reg *methods);

#endif

/* lua_util: option fields, class and handle helpers (see lua_util.h). */
#include "lua_util.h"

#include "buf.h"

#include <string.h>

/* Pushes t[field]; raises naming the field when it is neither nil nor `type`. */
static int get_field_of_type(lua_State *L, int t, const char *field, int type) {
  int actual = lua_getfield(L, t, field);
  if (actual == LUA_TNIL) {
    lua_pop(L, 1);
    return 0;
  }
  if (actual != type && !(type == LUA_TSTRING && actual == LUA_TNUMBER)) {
    luaL_error(L, "option '%s' must be a %s (got %s)", field, lua_typename(L, type),
               luaL_typename(L, -1));
  }
  return 1;
}

/* A number given where a string is expected is converted; the converted
 * string is kept alive in a weak table keyed by the options table, since
 * nothing else refers to it once it is popped. */
static const char *anchor_converted(lua_State *L, int t, const char *field, size_t *len) {
  static const char ANCHORS[] = "luagent.opt_anchors";
  if (luaL_getsubtable(L, LUA_REGISTRYINDEX, ANCHORS) == 0) { /* new: weak keys */
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
  }
  lua_pushvalue(L, t);
  if (lua_rawget(L, -2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushvalue(L, t);
    lua_pushvalue(L, -2);
    lua_rawset(L, -4);
  }
  lua_pushvalue(L, -3); /* the number */
  const char *s = lua_tolstring(L, -1, len);
  lua_setfield(L, -2, field);
  lua_pop(L, 3); /* anchors of t, anchors, the number */
  return s;
}

void set_string(lua_State *L, const char *field, const char *value) {
  lua_pushstring(L, value);
  lua_setfield(L, -2, field);
}

void set_integer(lua_State *L, const char *field, lua_Integer value) {
  lua_pushinteger(L, value);
  lua_setfield(L, -2, field);
}

void set_boolean(lua_State *L, const char *field, int value) {
  lua_pushboolean(L, value);
  lua_setfield(L, -2, field);
}

const char *opt_string(lua_State *L, int t, const char *field, const char *def, size_t *len) {
  t = lua_absindex(L, t);
  if (!get_field_of_type(L, t, field, LUA_TSTRING)) {
    if (len) *len = def ? strlen(def) : 0;
    return def;
  }
  if (lua_type(L, -1) == LUA_TNUMBER) return anchor_converted(L, t, field, len);
  /* the string stays alive: it is still referenced by the options table */
  const char *s = lua_tolstring(L, -1, len);
  lua_pop(L, 1);
  return s;
}

lua_Number opt_number(lua_State *L, int t, const char *field, lua_Number def) {
  if (!get_field_of_type(L, t, field, LUA_TNUMBER)) return def;
  lua_Number n = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return n;
}

lua_Integer opt_integer(lua_State *L, int t, const char *field, lua_Integer def) {
  if (!get_field_of_type(L, t, field, LUA_TNUMBER)) return def;
  int isint;
  lua_Integer n = lua_tointegerx(L, -1, &isint);
  if (!isint) luaL_error(L, "option '%s' must be an integer", field);
  lua_pop(L, 1);
  return n;
}

int opt_boolean(lua_State *L, int t, const char *field, int def) {
  if (!get_field_of_type(L, t, field, LUA_TBOOLEAN)) return def;
  int b = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return b;
}

int opt_function(lua_State *L, int t, const char *field) {
  return get_field_of_type(L, t, field, LUA_TFUNCTION);
}

void luagent_new_class(lua_State *L, const char *name, const luaL_Reg *methods) {
  luaL_newmetatable(L, name);
  lua_newtable(L); /* __index */
  for (const luaL_Reg *r = methods; r->name; r++) {
    lua_pushcfunction(L, r->func);
    if (strncmp(r->name, "__", 2) == 0)
      lua_setfield(L, -3, r->name);
    else
      lua_setfield(L, -2, r->name);
  }
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
}

static int handle_default_tostring(lua_State *L) {
  lua_getfield(L, lua_upvalueindex(1), "what");
  const luagent_handle *h = lua_touserdata(L, 1);
  lua_pushfstring(L, "%s (%s)", lua_tostring(L, -1), h && h->closed ? "closed" : "open");
  return 1;
}

void luagent_register_handle(lua_State *L, const luagent_handle_class *c) {
  luagent_new_class(L, c->name, c->methods);
  luaL_getmetatable(L, c->name);
  lua_getfield(L, -1, "__index");
  lua_pushcfunction(L, c->close);
  lua_setfield(L, -2, "close");
  lua_pop(L, 1);
  lua_pushcfunction(L, c->close);
  lua_setfield(L, -2, "__close");
  lua_pushcfunction(L, c->close);
  lua_setfield(L, -2, "__gc");
  if (c->tostring) {
    lua_pushcfunction(L, c->tostring);
  } else {
    lua_createtable(L, 0, 1);
    lua_pushstring(L, c->what);
    lua_setfield(L, -2, "what");
    lua_pushcclosure(L, handle_default_tostring, 1);
  }
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}

void luagent_add_methods(lua_State *L, const luagent_handle_class *c, const luaL_Reg *methods) {
  luaL_getmetatable(L, c->name);
  lua_getfield(L, -1, "__index");
  luaL_setfuncs(L, methods, 0);
  lua_pop(L, 2);
}

void *luagent_new_handle(lua_State *L, const luagent_handle_class *c, size_t size, int nuv) {
  luagent_handle *h = lua_newuserdatauv(L, size, nuv);
  memset(h, 0, size);
  h->closed = 1; /* until luagent_handle_open: born closed */
  luaL_setmetatable(L, c->name);
  return h;
}

void luagent_handle_open(void *h) { ((luagent_handle *)h)->closed = 0; }

int luagent_handle_release(void *p) {
  luagent_handle *h = p;
  if (h->released) return 0;
  h->released = 1;
  h->closed = 1;
  return 1;
}

void *luagent_check_handle(lua_State *L, int idx, const luagent_handle_class *c) {
  return luaL_checkudata(L, idx, c->name);
}

void *luagent_check_open(lua_State *L, int idx, const luagent_handle_class *c) {
  luagent_handle *h = luaL_checkudata(L, idx, c->name);
  if (h->closed) luaL_error(L, "%s is closed", c->what);
  return h;
}

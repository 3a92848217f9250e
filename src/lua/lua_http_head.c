/* lua_http_head: luagent.http_head — what a peer's HTTP head says, in its one
 * canonical form (src/core/http_head.h). The egress proxy parses in C where the
 * bytes are (egress:head); these are the same parsers for the rules, pins and
 * specs.
 *
 *   http_head.host(text) -> canonical, family (0 name, 4, 6) | nil, err (kind config)
 *   http_head.authority(text [, default_port]) -> host, port, family | nil, err
 *   http_head.parse_request(head [, "proxy" | "origin"]) -> request | nil, err
 *       err.kind "protocol", err.status 400, 431 or 501
 *   http_head.refusal(status, reason) -> the proxy's refusal response (bytes) */
#include "lua_http_head.h"

#include <lauxlib.h>
#include <string.h>

#include "buf.h"
#include "lua_errors.h"
#include "lua_util.h"

static void push_headers(lua_State *L, const http_message *m) {
  lua_createtable(L, (int)m->nfields, 0);
  for (size_t i = 0; i < m->nfields; i++) {
    const http_field *f = &m->fields[i];
    lua_createtable(L, 0, 3);
    lua_pushlstring(L, f->name, f->name_len);
    lua_setfield(L, -2, "name");
    lua_pushlstring(L, f->value, f->value_len);
    lua_setfield(L, -2, "value");
    char lower[256];
    size_t n = f->name_len < sizeof lower ? f->name_len : sizeof lower - 1;
    for (size_t k = 0; k < n; k++) lower[k] = f->name[k] >= 'A' && f->name[k] <= 'Z' ? (char)(f->name[k] + 32) : f->name[k];
    lua_pushlstring(L, lower, n);
    lua_setfield(L, -2, "lower");
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "headers");
}

static const char *const FORMS[] = {"origin", "absolute", "authority"};
static const char *const BODIES[] = {"none", "length", "chunked", "close"};

void lhttp_push_request(lua_State *L, const http_message *m) {
  lua_createtable(L, 0, 16);
  set_string(L, "method", m->method);
  set_string(L, "version", m->minor ? "HTTP/1.1" : "HTTP/1.0");
  set_string(L, "form", FORMS[m->form]);
  set_boolean(L, "connect", m->form == HTTP_AUTHORITY_FORM);
  if (m->form != HTTP_ORIGIN_FORM) {
    set_string(L, "host", m->target_host.name);
    set_integer(L, "port", m->target_host.port);
    set_integer(L, "family", m->target_host.family);
    set_boolean(L, "literal", m->target_host.family != 0);
  }
  if (m->path) set_string(L, "path", m->path);
  push_headers(L, m);
  if (m->has_host) {
    lua_createtable(L, 0, 2);
    set_string(L, "host", m->host.name);
    set_integer(L, "port", m->host.port);
    lua_setfield(L, -2, "host_header");
  }
  set_string(L, "body", BODIES[m->body]);
  if (m->body == HTTP_BODY_LENGTH) set_integer(L, "length", (lua_Integer)m->length);
}

int lhttp_fail(lua_State *L, int status, const char *why) {
  lua_pushnil(L);
  luagent_push_error(L, "protocol", "%s", why);
  luagent_error_set_integer(L, "status", status);
  return 2;
}

static int l_host(lua_State *L) {
  size_t n;
  const char *text = luaL_checklstring(L, 1, &n), *why = NULL;
  http_host h;
  if (http_host_parse(text, n, &h, &why) < 0) return luagent_fail(L, "config", "%s", why);
  lua_pushstring(L, h.name);
  lua_pushinteger(L, h.family);
  return 2;
}

static int l_authority(lua_State *L) {
  size_t n;
  const char *text = luaL_checklstring(L, 1, &n), *why = NULL;
  int default_port = (int)luaL_optinteger(L, 2, 0);
  http_host h;
  if (http_authority_parse(text, n, default_port, &h, &why) < 0) return luagent_fail(L, "config", "%s", why);
  lua_pushstring(L, h.name);
  lua_pushinteger(L, h.port);
  lua_pushinteger(L, h.family);
  return 3;
}

static int l_parse_request(lua_State *L) {
  size_t n;
  const char *head = luaL_checklstring(L, 1, &n), *why = NULL;
  static const char *const kinds[] = {"proxy", "origin", NULL};
  int kind = luaL_checkoption(L, 2, "proxy", kinds) == 0 ? HTTP_PROXY_REQUEST : HTTP_ORIGIN_REQUEST;
  http_message m;
  int status;
  if (http_request_parse(head, n, kind, &m, &status, &why) < 0) {
    int rc = lhttp_fail(L, status, why);
    http_message_free(&m);
    return rc;
  }
  lhttp_push_request(L, &m);
  http_message_free(&m);
  return 1;
}

static int l_refusal(lua_State *L) {
  int status = (int)luaL_checkinteger(L, 1);
  const char *reason = luaL_checkstring(L, 2);
  buf out = BUF_INIT;
  http_refusal(&out, status, reason);
  lua_pushlstring(L, out.data, out.len);
  buf_free(&out);
  return 1;
}

int luaopen_luagent_http_head(lua_State *L) {
  static const luaL_Reg funcs[] = {{"host", l_host}, {"authority", l_authority},
                                   {"parse_request", l_parse_request}, {"refusal", l_refusal}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  lua_pushinteger(L, HTTP_HEAD_MAX);
  lua_setfield(L, -2, "HEAD_MAX");
  return 1;
}

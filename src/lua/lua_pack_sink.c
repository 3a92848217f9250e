/* lua_pack_sink: a pack's tar stream into a folder or a file (see
 * lua_pack_sink.h). The owner — a result of the supervisor channel — keeps
 * the extractor handle alive and frees the sink; nothing here calls back. */
#include "lua_pack_sink.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>

#include "lua_util.h"

int lsink_spec(lua_State *L, int opts) {
  if (!opts) return LSINK_NONE;
  static const char *const kinds[] = {"extract", "save"};
  static const char *const needs[] = {"dest", "path"};
  for (int k = 0; k < 2; k++) {
    if (lua_getfield(L, opts, kinds[k]) == LUA_TTABLE) {
      if (!opt_string(L, lua_gettop(L), needs[k], NULL, NULL))
        luaL_error(L, "send: opts.%s needs '%s'", kinds[k], needs[k]);
      return k == 0 ? LSINK_EXTRACT : LSINK_SAVE;
    }
    lua_pop(L, 1);
  }
  return LSINK_NONE;
}

int lsink_open(lua_State *L, pack_sink **slot, int kind) {
  int spec = lua_gettop(L);
  pack_sink *s = calloc(1, sizeof *s);
  if (!s) return luaL_error(L, "out of memory");
  s->file.fd = -1;
  *slot = s;
  s->limit = (long long)opt_integer(L, spec, "limit", 0);
  if (kind == LSINK_EXTRACT) {
    s->extract = ltar_extract_new(L, opt_string(L, spec, "dest", NULL, NULL), spec);
    if (!s->extract) return 2;
  } else if (file_sink_open(&s->file, opt_string(L, spec, "path", NULL, NULL), 0) != 0) {
    return luagent_fail(L, "io", "%s", s->file.error);
  }
  lua_remove(L, spec);
  return 0;
}

/* Refuses the rest of the stream; 1 the first time. */
static int refuse(pack_sink *s, const char *why) {
  if (s->failed) return 0;
  s->failed = 1;
  snprintf(s->error, sizeof s->error, "%s", why);
  return 1;
}

int lsink_feed(pack_sink *s, const char *data, size_t n) {
  if (s->failed) return 0;
  s->streamed += (long long)n;
  if (s->limit && s->streamed > s->limit) {
    char why[120];
    snprintf(why, sizeof why, "the archive from the sandbox is larger than its limits allow (%lld bytes)", s->limit);
    return refuse(s, why);
  }
  if (s->extract) {
    if (s->extract->handle.closed) return refuse(s, "the tar extractor was closed");
    if (tar_extract_feed(s->extract->x, data, n) != 0) return refuse(s, tar_extract_error(s->extract->x));
    return 0;
  }
  return file_sink_write(&s->file, data, n) != 0 ? refuse(s, s->file.error) : 0;
}

static void set_sink_error(lua_State *L, const char *why) {
  lua_pushstring(L, why);
  lua_setfield(L, -2, "sink_error");
}

void lsink_finish(lua_State *L, pack_sink *s, int done, int exit_code, int left_out) {
  if (s->failed) {
    set_sink_error(L, s->error);
  } else if (!done) {
    set_sink_error(L, "the stream ended before the pack did");
  } else if (s->extract && s->extract->handle.closed) { /* e.g. collected with the channel */
    set_sink_error(L, "the tar extractor was closed");
  } else if (s->extract) {
    tar_extract *x = s->extract->x;
    if (tar_extract_finish(x) != 0) {
      set_sink_error(L, tar_extract_error(x));
    } else {
      ltar_push_report(L, x);
      lua_setfield(L, -2, "report");
    }
  } else if (exit_code != 0 || left_out) {
    set_sink_error(L, "the pack left entries out or failed");
  } else if (file_sink_commit(&s->file) != 0) {
    set_sink_error(L, s->file.error);
  } else {
    lua_pushinteger(L, (lua_Integer)s->file.written);
    lua_setfield(L, -2, "saved");
  }
  s->failed = 1; /* finished: take nothing more */
}

void lsink_free(pack_sink *s) {
  if (!s) return;
  if (s->extract) ltar_extract_close(s->extract);
  else file_sink_discard(&s->file);
  free(s);
}

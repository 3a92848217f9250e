/* lua_pack_sink: where a pack's tar stream goes instead of a result's
 * stdout — extracted into a host folder (src/core/tar_extract.c, through a
 * tar extractor handle) or saved as a host file renamed into place at the
 * end (src/core/file_sink.c). The stream comes from inside the sandbox, so
 * it is capped here too. Used by the supervisor channel:
 * lua_supervisor_send.c makes a sink for a pack request,
 * lua_supervisor_channel.c feeds it the pack's O frames, finishes it into
 * the result and frees it. It calls neither: a sink that refuses the stream
 * says so by its return value, and the channel kills the pack. */
#ifndef LUAGENT_LUA_PACK_SINK_H
#define LUAGENT_LUA_PACK_SINK_H

#include <lua.h>

#include "file_sink.h"
#include "lua_tar.h"

enum { LSINK_NONE, LSINK_EXTRACT, LSINK_SAVE };

typedef struct pack_sink {
  ltar_extract *extract;  /* NULL: the stream is saved into file */
  file_sink file;
  long long streamed;     /* tar bytes received */
  long long limit;        /* the most accepted (0: none) */
  int failed;             /* refused or broken (or finished): takes nothing more */
  char error[300];
} pack_sink;

/* The sink the send options at index opts ask for (0: no options):
 * LSINK_EXTRACT for opts.extract, LSINK_SAVE for opts.save (a table, pushed),
 * or LSINK_NONE with nothing pushed. Raises when it lacks its dest / path. */
int lsink_spec(lua_State *L, int opts);
/* Makes a sink of kind from the spec table on top (lsink_spec's) and pops
 * the spec. *slot is set before anything can raise, so its owner frees it
 * (lsink_free) whatever happens. An extract sink pushes its tar extractor
 * handle, which the caller keeps alive as long as the sink. Returns 0, or
 * pushes nil, err and returns 2 (the spec stays). */
int lsink_open(lua_State *L, pack_sink **slot, int kind);
/* n bytes of the tar stream into s. 1 when s refused them just now (over
 * its limit, the extraction failed, the file could not be written): the
 * caller stops the stream; 0 otherwise (also once it failed before). */
int lsink_feed(pack_sink *s, const char *data, size_t n);
/* Sets the pack's fields of the result table on top: report (extracted),
 * saved (bytes) or sink_error. A saved file is committed only when the pack
 * is done with exit code 0, left nothing out (left_out 0: it printed
 * nothing on stderr) and the stream was whole. s takes nothing after. */
void lsink_finish(lua_State *L, pack_sink *s, int done, int exit_code, int left_out);
/* Closes its extractor or discards an uncommitted file, and frees s. NULL: no-op. */
void lsink_free(pack_sink *s);

#endif

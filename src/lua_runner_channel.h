/* lua_runner_channel: what the two files of the supervisor channel share —
 * lua_runner_channel.c (the handle, results, waits) and lua_runner_send.c
 * (requests from Lua tables, and the sinks a pack streams into). The Lua
 * surface is written at the top of lua_runner_channel.c. */
#ifndef LUAGENT_LUA_RUNNER_CHANNEL_H
#define LUAGENT_LUA_RUNNER_CHANNEL_H

#include <lua.h>

#include "attach.h"
#include "file_sink.h"
#include "lua_engine_io.h"
#include "lua_tar.h"
#include "lua_util.h"
#include "runner.h"

enum {
  RUNNER_UV_CLOSED = 1, /* id -> result table, made at close */
  RUNNER_UV_SINKS,      /* id -> the tar extractor handle a pack streams into */
  RUNNER_UV_COUNT = RUNNER_UV_SINKS
};

typedef struct result_wait result_wait;

/* Where a pack's tar stream goes instead of stdout: extracted into a folder
 * (extract, a handle anchored in RUNNER_UV_SINKS) or saved as a file. The
 * stream comes from inside the sandbox, so it is capped here too. */
typedef struct pack_sink {
  ltar_extract *extract;  /* NULL: the stream is saved into file */
  file_sink file;
  long long streamed;     /* tar bytes received */
  long long limit;        /* the most accepted (0: none) */
  int failed;             /* refused or broken: the pack was killed */
  char error[300];
} pack_sink;

/* One command's output and end, collected as the supervisor reports them. */
typedef struct runner_result {
  long long id;
  capped_output out[3];
  size_t caps[3];
  unsigned long long taken[3]; /* bytes already handed out by take() */
  int was_truncated;           /* a take() cut some */
  buf failure;
  int done;
  runner_exit exit;
  result_wait *waiter; /* the task waiting for it, if any */
  pack_sink *sink;     /* a pack's, else NULL */
  struct runner_result *next;
} runner_result;

typedef struct runner_channel {
  luagent_handle handle; /* closed: close() was called */
  docker_attach *attach;
  runner_parser parser;
  int ready;
  int attached;          /* the engine let the attach through */
  char open_error[24];   /* the attach's error kind when it ended before that */
  char version[16];
  int ended;             /* the connection is over (supervisor gone, or closed) */
  char reason[512];
  capped_output diagnostics; /* the supervisor's own stderr */
  wait_slot ready_slot;
  loop_timer ready_timer;
  runner_result *results;
  loop *lp;
} runner_channel;

extern const luagent_handle_class RUNNER_CHANNEL;

/* The result of command id, or NULL. */
runner_result *lrunner_find(runner_channel *ch, long long id);
/* A new result for id with these caps per stream; NULL when out of memory. */
runner_result *lrunner_add(runner_channel *ch, long long id, size_t cap, size_t err_cap);
/* Removes and frees the result of id (the channel at stack index 1). */
void lrunner_forget(lua_State *L, runner_channel *ch, long long id);
/* Pushes nil, {kind = "runner", message}: why the supervisor is gone, with
 * the end of what it printed on stderr. Returns 2. */
int lrunner_failure(lua_State *L, runner_channel *ch);
/* Queues an encoded request. 0, or -1 once the connection is over. */
int lrunner_write(runner_channel *ch, const buf *request);

/* channel:send(op, id, fields [, opts]) (lua_runner_send.c). */
int lrunner_send(lua_State *L);
/* A pack's stdout bytes into its sink; on a refusal the pack is killed. */
void lrunner_sink_feed(runner_channel *ch, runner_result *r, const char *data, size_t n);
/* Sets the pack's fields of the result table on top: report (extracted),
 * saved (bytes) or sink_error; commits a saved file only when the pack ended
 * with 0, left nothing out (its stderr is empty) and the stream was whole.
 * The channel is at stack index 1. No-op without a sink. */
void lrunner_sink_finish(lua_State *L, runner_channel *ch, runner_result *r);
/* Lets go of r's sink (discarding an uncommitted file); channel at index 1. */
void lrunner_sink_free(lua_State *L, runner_channel *ch, runner_result *r);

#endif

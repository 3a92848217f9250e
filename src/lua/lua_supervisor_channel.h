/* lua_supervisor_channel: the supervisor channel's state, and what
 * lua_supervisor_send.c uses of lua_supervisor_channel.c. The channel is two
 * files that call one way: lua_supervisor_channel.c is the handle (open,
 * close, what the supervisor says, wait/take/result/alive) and
 * lua_supervisor_send.c adds the one method that writes, channel:send, to
 * its class (lchannel_send_register, which the hub calls after
 * lchannel_register: lua_engine_stream.h); send calls the helpers below,
 * the channel never calls send. Pack sinks are
 * lua_pack_sink.h. The Lua surface is written at the top of
 * lua_supervisor_channel.c. */
#ifndef LUAGENT_LUA_SUPERVISOR_CHANNEL_H
#define LUAGENT_LUA_SUPERVISOR_CHANNEL_H

#include <lua.h>

#include "attach.h"
#include "docker_wire.h"
#include "lua_pack_sink.h"
#include "lua_util.h"
#include "supervisor_frames.h"

enum {
  CHANNEL_UV_CLOSED = 1, /* id -> result table, made at close */
  CHANNEL_UV_SINKS,      /* id -> the tar extractor handle a pack streams into (send
                            sets it, the result's free clears it) */
  CHANNEL_UV_COUNT = CHANNEL_UV_SINKS
};

typedef struct result_wait result_wait;

/* One command's output and end, collected as the supervisor reports them. */
typedef struct sv_result {
  long long id;
  capped_output out[3];
  size_t caps[3];
  unsigned long long taken[3]; /* bytes already handed out by take() */
  int was_truncated;           /* a take() cut some */
  buf failure;
  int done;
  sv_exit exit;
  result_wait *waiter; /* the task waiting for it, if any */
  pack_sink *sink;     /* a pack's, else NULL */
  size_t window;       /* > 0: the channel stops reading while this much stdout waits untaken */
  int live;            /* fresh() was asked for: output is kept for it too, as it comes */
  buf fresh[3];        /* what came since the last fresh(), per stream (at most LIVE_MAX each) */
  unsigned long long fresh_dropped[3]; /* bytes a full fresh buffer could not keep */
  struct sv_result *next;
} sv_result;

typedef struct sv_channel {
  luagent_handle handle; /* closed: close() was called */
  docker_attach *attach;
  sv_frame_parser parser;
  int ready;
  int attached;          /* the engine let the attach through */
  char open_error[24];   /* the attach's error kind when it ended before that */
  int open_status;       /* the HTTP status of a refused upgrade, else 0 */
  char version[16];
  int ended;             /* the connection is over (supervisor gone, or closed) */
  char reason[512];
  capped_output diagnostics; /* the supervisor's own stderr */
  wait_slot ready_slot;
  loop_timer ready_timer;
  sv_result *results;
  int paused;            /* a result's window is full: the attach is not read */
  long long mark;        /* the last X frame's mark (sv_exit.mark), in the order they came */
  loop *lp;
} sv_channel;

extern const luagent_handle_class SUPERVISOR_CHANNEL;

/* The result of command id, or NULL. */
sv_result *lchannel_find(sv_channel *ch, long long id);
/* A new result for id with these caps per stream; NULL when out of memory. */
sv_result *lchannel_add(sv_channel *ch, long long id, size_t cap, size_t err_cap);
/* Removes and frees the result of id (the channel at stack index 1). */
void lchannel_forget(lua_State *L, sv_channel *ch, long long id);
/* Pushes nil, {kind = "supervisor_lost", message}: why the supervisor is gone, with
 * the end of what it printed on stderr. Returns 2. */
int lchannel_failure(lua_State *L, sv_channel *ch);
/* Pauses the channel's reading while a result with a window holds that
 * much untaken stdout, and resumes it once none does (a streamed pack: the
 * reader of its output paces the supervisor). */
void lchannel_pace(sv_channel *ch);
/* Queues an encoded request. 0, or -1 once the connection is over. */
int lchannel_write(sv_channel *ch, const buf *request);

#endif

/* supervisor_frames: the host side of the frames the sandbox supervisor writes on its
 * stdout (sandbox/supervisor/DESIGN.md, "Frames"); the requests it reads are
 * src/core/supervisor_proto.h. Each message is a text line, some followed by bytes:
 *   R <version>                      ready (SV_PROTOCOL_VERSION, supervisor_proto.h)
 *   O <id> <n>\n<n bytes>            stdout of command <id>
 *   E <id> <n>\n<n bytes>            stderr of command <id>
 *   F <id> <n>\n<n bytes>            command <id> could not start (the reason)
 *   X <id> <code> <flags> <killed>   command <id> ended; code: the exit code or
 *                                    128 + signal; flags: letters, "-" for none:
 *                                    "k" killed on request, "t" timed out (killed
 *                                    by the supervisor), "o" OOM-killed, "r" (python)
 *                                    the interpreter was restarted before it;
 *                                    killed: how many other processes of the command
 *                                    were killed when it ended (0 when absent)
 *   X <id> <code> <flags> <killed> <mark>   the same, and the change generation of
 *                                    the folder serve watches (sandbox/supervisor/watch.h):
 *                                    it differs from an earlier X's when anything
 *                                    under that folder may have changed between them
 * Pure C. */
#ifndef LUAGENT_SUPERVISOR_FRAMES_H
#define LUAGENT_SUPERVISOR_FRAMES_H

#include <stddef.h>

#include "buf.h"
#include "supervisor_proto.h"


typedef struct sv_exit {
  int code;
  char flags[16];  /* "" when none */
  long killed;
  int timed_out;   /* flags has 't' */
  int oom;         /* flags has 'o' */
  long long mark;  /* the watched folder's change generation, -1 when absent (not watched, or unknown) */
} sv_exit;

typedef struct sv_frame_events {
  void (*ready)(void *ctx, const char *version);
  void (*output)(void *ctx, long long id, int stream, const char *data, size_t n); /* stream 1 or 2 */
  void (*failed)(void *ctx, long long id, const char *data, size_t n);
  void (*exited)(void *ctx, long long id, const sv_exit *x);
} sv_frame_events;

typedef struct sv_frame_parser {
  buf line;
  char kind;         /* 'O', 'E' or 'F' while reading its bytes, else 0 */
  long long id;
  size_t remaining;
  buf failure;       /* an F message being collected */
} sv_frame_parser;

void sv_frames_init(sv_frame_parser *p);
/* Returns 0, or -1 on a line that is not the protocol (its text in p->line). */
int sv_frames_feed(sv_frame_parser *p, const char *data, size_t n, const sv_frame_events *ev, void *ctx);
void sv_frames_free(sv_frame_parser *p);

#endif

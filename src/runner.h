/* runner: the host side of the protocol spoken with sandbox/runner.py, the
 * small supervisor a session starts once inside its container, so that each
 * command costs a fork there instead of a Docker exec (~30 ms).
 *
 * Host -> runner (its stdin): a JSON line, then as many raw bytes as its
 * "size" field says (stdin data, Python code).
 * Runner -> host (its stdout), each message a text line, some followed by bytes:
 *   R <version>               ready
 *   O <id> <n>\n<n bytes>     stdout of command <id>
 *   E <id> <n>\n<n bytes>     stderr of command <id>
 *   F <id> <n>\n<n bytes>     command <id> could not start (the reason)
 *   X <id> <code> <flags>     command <id> ended; flags: "o" OOM-killed, "k" killed on
 *                             request, "r" the Python session was restarted, "-" none
 * Pure C. */
#ifndef LUAGENT_RUNNER_H
#define LUAGENT_RUNNER_H

#include <stddef.h>

#include "buf.h"

typedef struct runner_events {
  void (*ready)(void *ctx, const char *version);
  void (*output)(void *ctx, long long id, int stream, const char *data, size_t n); /* stream 1 or 2 */
  void (*failed)(void *ctx, long long id, const char *data, size_t n);
  void (*exited)(void *ctx, long long id, int code, const char *flags);
} runner_events;

typedef struct runner_parser {
  buf line;
  char kind;         /* 'O', 'E' or 'F' while reading its bytes, else 0 */
  long long id;
  size_t remaining;
  buf failure;       /* an F message being collected */
} runner_parser;

void runner_parser_init(runner_parser *p);
/* Returns 0, or -1 on a line that is not the protocol (its text in p->line). */
int runner_parser_feed(runner_parser *p, const char *data, size_t n, const runner_events *ev, void *ctx);
void runner_parser_free(runner_parser *p);

#endif

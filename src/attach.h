/* attach: a full-duplex Docker exec attach over the engine's unix socket.
 *
 * POST /exec/ID/start with "Upgrade: tcp" turns the HTTP connection into a
 * raw one ("hijacked"): bytes we write are the command's stdin, bytes we
 * read are its stdout/stderr in the engine's 8-byte-header frames. libcurl
 * cannot write after the request body, so this is a plain socket on the
 * event loop. Pure C. */
#ifndef LUAGENT_ATTACH_H
#define LUAGENT_ATTACH_H

#include <stddef.h>

#include "loop.h"

typedef struct attach_callbacks {
  void (*on_open)(void *ctx);                                         /* upgrade accepted */
  int (*on_data)(void *ctx, int stream, const char *data, size_t n);  /* demultiplexed; -1 closes */
  void (*on_close)(void *ctx, const char *why);                       /* why: NULL at a clean end */
} attach_callbacks;

typedef struct docker_attach docker_attach;

/* Connects to socket_path and sends the upgrade request for `path` (e.g.
 * "/v1.41/exec/ID/start") with a JSON `body`. NULL with a reason in err when
 * the socket cannot be reached. */
docker_attach *docker_attach_start(loop *lp, const char *socket_path, const char *path, const char *body,
                                   const attach_callbacks *cb, void *ctx, char *err, size_t errlen);
/* Queues bytes for the command's stdin. Returns 0, or -1 once closed. */
int docker_attach_write(docker_attach *a, const void *data, size_t n);
/* Closes the connection now; no callback runs afterwards. Safe on NULL. */
void docker_attach_free(docker_attach *a);

#endif

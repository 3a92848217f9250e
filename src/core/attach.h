/* attach: a full-duplex exec attach — a Docker engine's, over its unix
 * socket, plain TCP or TCP with TLS, or a Kubernetes API server's exec over
 * a WebSocket.
 *
 * Docker: POST /exec/ID/start with "Upgrade: tcp" turns the HTTP connection
 * into a raw one ("hijacked"): bytes we write are the command's stdin, bytes
 * we read are its stdout/stderr in the engine's 8-byte-header frames.
 * Kubernetes (target.websocket): GET .../pods/POD/exec?... with "Upgrade:
 * websocket" (websocket.h); stdin goes as binary messages on channel 0,
 * stdout and stderr come on channels 1 and 2, and the Status on channel 3
 * says how the command ended (kube_exec.h). Both hand the owner the same
 * thing: stdin written, stdout and stderr read, one end. libcurl cannot
 * write after a request body, so it only makes the connection
 * (CURLOPT_CONNECT_ONLY: connect, and the TLS handshake with the TLS
 * options every engine request uses, see http_set_tls) and this file speaks
 * HTTP on it with curl_easy_send/recv, watching its socket on the event
 * loop. The same code serves every kind of endpoint. Pure C. */
#ifndef LUAGENT_ATTACH_H
#define LUAGENT_ATTACH_H

#include <stddef.h>

#include "buf.h"
#include "http.h"
#include "loop.h"

/* Where the engine is: the fields of a streaming call's options. */
typedef struct attach_target {
  const char *url;           /* http(s)://host[:port]/vX/exec/ID/start (or .../pods/POD/exec?...): the
                                request's path, and where to connect when there is no unix_socket */
  const char *unix_socket;   /* connect through this socket instead */
  http_tls tls;             /* TLS options (https:// urls) */
  double connect_timeout;    /* connect + TLS handshake, seconds; 0: 10 */
  int websocket;             /* a Kubernetes exec: GET, upgraded to a WebSocket (no body) */
  const char *const *headers; /* websocket: more request lines ("Authorization: Bearer ..."),
                                 NULL-terminated; may be NULL */
} attach_target;

typedef struct attach_callbacks {
  void (*on_open)(void *ctx);                                         /* upgrade accepted */
  int (*on_data)(void *ctx, int stream, const char *data, size_t n);  /* demultiplexed; -1 closes */
  /* The connection is over; `why` says so, naming the engine ("the Docker
   * engine at unix://...", "the Kubernetes API server at https://..."; a
   * Kubernetes exec's end says how the command ended, from its Status).
   * kind is NULL when the engine ended the stream after the upgrade, else a
   * luagent.errors kind: docker_unreachable, or cluster_unreachable for a
   * websocket (no connection), tls (the handshake or the certificate check
   * failed), docker, or kubernetes (the engine refused the upgrade: the
   * message is its own, docker_attach_status its HTTP status), network (the
   * connection broke), protocol (a malformed stream or handshake). It must
   * not free the attach. */
  void (*on_close)(void *ctx, const char *kind, const char *why);
} attach_callbacks;

typedef struct docker_attach docker_attach;

/* Starts connecting to the engine of `target` (the event loop does the rest:
 * no call blocks) and queues the upgrade request with a JSON `body` (Docker;
 * a websocket's request has none). NULL
 * with a reason in err when the target is malformed or out of memory; every
 * other failure comes through on_close. */
docker_attach *docker_attach_start(loop *lp, const attach_target *target, const char *body,
                                   const attach_callbacks *cb, void *ctx, char *err, size_t errlen);
/* Queues bytes for the command's stdin; they are written as the socket
 * takes them (the loop waits for it to be writable), never blocking (a
 * websocket's wait for the upgrade). Returns 0, or -1 once closed. */
int docker_attach_write(docker_attach *a, const void *data, size_t n);
/* Stops reading the engine's stream (paused 1) until resumed (0): what the
 * command prints waits in the socket, and the engine holds its writer back.
 * Writing goes on. */
void docker_attach_pause(docker_attach *a, int paused);
/* Bytes queued and not yet taken by the socket. */
size_t docker_attach_pending(const docker_attach *a);
/* How messages name the engine: "unix:///var/run/docker.sock", "tcp://host:port",
 * "https://host:port" (a websocket's). */
const char *docker_attach_engine(const docker_attach *a);
/* The HTTP status with which the engine refused the upgrade; 0 when it did not. */
int docker_attach_status(const docker_attach *a);
/* Closes the connection now; no callback runs afterwards. Safe on NULL. */
void docker_attach_free(docker_attach *a);

/* ---- the pure parts, exported for tests ---- */

/* Splits an http:// or https:// url into its authority (host[:port]) and
 * path ("/" when it has none). Returns 0, or -1 for another scheme or an
 * empty host. */
int attach_split_url(const char *url, const char **authority, size_t *authority_len, const char **path);
/* Appends the upgrade request for path with a JSON body. 0, or -1 (memory). */
int attach_request(buf *out, const char *host, size_t host_len, const char *path, const char *body);
/* Reads an HTTP response head at the start of data: 1 when it is complete
 * (*status: its code, 0 when the status line is not HTTP/1.x; *head_len:
 * its length with the blank line), 0 when more bytes are needed. */
int attach_response_head(const char *data, size_t len, int *status, size_t *head_len);

#endif

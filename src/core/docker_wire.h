/* docker_wire: the pure-C parts of the Docker Engine API client.
 *
 *   - where the engine is: DOCKER_HOST (unix:// or tcp://, TLS from
 *     DOCKER_TLS_VERIFY / DOCKER_CERT_PATH), default /var/run/docker.sock;
 *   - the exec attach stream: 8-byte frame headers demultiplexed into stdout
 *     and stderr, each capped: the first and last halves of the cap are kept,
 *     the middle is counted and replaced by a marker, so host memory stays
 *     bounded whatever the command prints;
 *   - the engine's own words in an error response body, read in this one
 *     place for every layer (the C streams and lua/luagent/engine_client.lua).
 * Its Lua face is src/lua/lua_docker_wire.c; the streams that use it are the
 * parts of luagent.engine_stream (src/lua/lua_engine_stream.h); policies live
 * in lua/luagent/engine_client.lua and the sandbox modules. */
#ifndef LUAGENT_DOCKER_WIRE_H
#define LUAGENT_DOCKER_WIRE_H

#include <limits.h>
#include <stddef.h>

#include "buf.h"
#include "capped.h"

typedef struct docker_endpoint {
  char unix_socket[PATH_MAX]; /* set for unix:// endpoints */
  char base_url[512];         /* http://localhost for a socket, http(s)://host:port for tcp */
  int tls;
  int tls_verify;
  char ca_file[PATH_MAX], cert_file[PATH_MAX], key_file[PATH_MAX];
  char description[PATH_MAX + 16]; /* how to name it in messages */
} docker_endpoint;

/* docker_host, tls_verify, cert_path: the values of DOCKER_HOST,
 * DOCKER_TLS_VERIFY and DOCKER_CERT_PATH (NULL when unset); home: $HOME.
 * Returns 0, or -1 with a message in err. */
int docker_endpoint_parse(const char *docker_host, const char *tls_verify, const char *cert_path,
                          const char *home, docker_endpoint *out, char *err, size_t errlen);

enum { DOCKER_STDOUT = 1, DOCKER_STDERR = 2 };

/* Receives the payload of each frame; returns 0, or -1 to stop. */
typedef int (*docker_frame_fn)(void *ctx, int stream, const char *data, size_t n);

typedef struct docker_demux {
  unsigned char header[8];
  size_t header_len;
  int stream;          /* stream of the frame being read */
  size_t remaining;    /* payload bytes left in that frame */
} docker_demux;

void docker_demux_init(docker_demux *d);
/* Returns 0, or -1 on a malformed frame header or when `fn` stops. */
int docker_demux_feed(docker_demux *d, const char *data, size_t n, docker_frame_fn fn, void *ctx);
/* True when the stream stopped inside a frame. */
int docker_demux_partial(const docker_demux *d);

/* stdout and stderr of one command, each capped. */
typedef struct docker_capture {
  docker_demux demux;
  capped_output out[3]; /* [DOCKER_STDOUT], [DOCKER_STDERR] */
} docker_capture;

void docker_capture_init(docker_capture *c, size_t cap_per_stream);
int docker_capture_feed(docker_capture *c, const char *data, size_t n);
/* A docker_frame_fn writing into the capture's outputs (ctx: the capture). */
int docker_capture_frame(void *ctx, int stream, const char *data, size_t n);
void docker_capture_free(docker_capture *c);

/* The engine's message in an error response body: the top-level "message"
 * string of a JSON object ({"message": "No such container: x"}), its escapes
 * decoded (\uXXXX and surrogate pairs as UTF-8); for any other body, its
 * first line without trailing white space. Appends to out (the message may
 * contain NUL bytes from \u0000: use out->len). Returns 1 when the message
 * came from JSON, 0 from the fallback, -1 when out of memory. */
int docker_error_message(const char *body, size_t len, buf *out);

#endif

/* attach: the hijacked exec connection (see attach.h).
 *
 * Three stages. CONNECTING: rawconn.c makes the connection (and the TLS
 * handshake) on the event loop. HANDSHAKE: the upgrade request (queued at
 * the start) is written and the response head read. OPEN: the raw stream,
 * both ways, demultiplexed into the engine's stdout and stderr frames. */
#include "attach.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_wire.h"
#include "rawconn.h"

#define MAX_HEAD 16384

enum attach_state { CONNECTING, HANDSHAKE, OPEN, CLOSED };

struct docker_attach {
  rawconn *conn;
  enum attach_state state;
  buf head; /* the HTTP response head while upgrading */
  docker_demux demux;
  attach_callbacks cb;
  void *ctx;
  char engine[PATH_MAX + 16];
  char why[PATH_MAX + 512];
};

/* ---- the pure parts ---- */

int attach_split_url(const char *url, const char **authority, size_t *authority_len, const char **path) {
  const char *p;
  if (strncmp(url, "http://", 7) == 0)
    p = url + 7;
  else if (strncmp(url, "https://", 8) == 0)
    p = url + 8;
  else
    return -1;
  size_t n = strcspn(p, "/?#");
  if (n == 0 || (p[n] != '/' && p[n] != '\0')) return -1;
  *authority = p;
  *authority_len = n;
  *path = p[n] ? p + n : "/";
  return 0;
}

int attach_request(buf *out, const char *host, size_t host_len, const char *path, const char *body) {
  if (strpbrk(path, " \r\n") || memchr(host, '\r', host_len) || memchr(host, '\n', host_len)) return -1;
  return buf_printf(out,
                    "POST %s HTTP/1.1\r\nHost: %.*s\r\nContent-Type: application/json\r\n"
                    "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: %zu\r\n\r\n%s",
                    path, (int)host_len, host, strlen(body), body);
}

int attach_response_head(const char *data, size_t len, int *status, size_t *head_len) {
  const char *end = memmem(data, len, "\r\n\r\n", 4);
  if (!end) return 0;
  *head_len = (size_t)(end + 4 - data);
  *status = 0;
  const unsigned char *s = (const unsigned char *)data;
  if (*head_len >= 13 && memcmp(data, "HTTP/1.", 7) == 0 && isdigit(s[7]) && s[8] == ' ' && isdigit(s[9]) &&
      isdigit(s[10]) && isdigit(s[11]) && (s[12] == ' ' || s[12] == '\r'))
    *status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
  return 1;
}

/* ---- the end ---- */

/* The connection is over: why is a->why. */
static void finish(docker_attach *a, const char *kind) {
  if (a->state == CLOSED) return;
  a->state = CLOSED;
  a->cb.on_close(a->ctx, kind, a->why);
}

/* Ends the connection for a reason of the attach's own (a->why). */
static void end(docker_attach *a, const char *kind) {
  rawconn_end(a->conn, kind, a->why); /* on_closed calls finish */
}

/* ---- the stream ---- */

static int deliver(docker_attach *a, const char *data, size_t n) {
  if (docker_demux_feed(&a->demux, data, n, a->cb.on_data, a->ctx) != 0) {
    snprintf(a->why, sizeof a->why, "malformed stream from the Docker engine at %s", a->engine);
    end(a, "protocol");
    return -1;
  }
  return 0;
}

/* Reads the response head; on "101"/"200" the rest is the raw stream. */
static void handshake(docker_attach *a, const char *data, size_t n) {
  buf_append(&a->head, data, n);
  int status;
  size_t head_len;
  if (!attach_response_head(a->head.data, a->head.len, &status, &head_len)) {
    if (a->head.len > MAX_HEAD) {
      snprintf(a->why, sizeof a->why, "the Docker engine at %s sent an oversized response head", a->engine);
      end(a, "protocol");
    }
    return;
  }
  if (status != 101 && status != 200) {
    snprintf(a->why, sizeof a->why, "the Docker engine at %s refused the attach (HTTP %d): %.300s", a->engine,
             status, a->head.data + head_len);
    end(a, "docker");
    return;
  }
  a->state = OPEN;
  a->cb.on_open(a->ctx);
  if (a->state == OPEN && a->head.len > head_len) deliver(a, a->head.data + head_len, a->head.len - head_len);
  buf_free(&a->head);
}

static void on_connected(void *ctx) {
  docker_attach *a = ctx;
  a->state = HANDSHAKE;
}

static int on_data(void *ctx, const char *data, size_t n) {
  docker_attach *a = ctx;
  if (n == 0) {
    int open = a->state == OPEN;
    snprintf(a->why, sizeof a->why, open ? "the Docker engine at %s ended the stream"
                                         : "the Docker engine at %s closed the connection before it answered",
             a->engine);
    end(a, open ? NULL : "network");
    return -1;
  }
  if (a->state == HANDSHAKE)
    handshake(a, data, n);
  else if (deliver(a, data, n) != 0)
    return -1;
  return a->state == CLOSED ? -1 : 0;
}

/* rawconn's own failures keep its words; "connect" is the engine's kind of it. */
static void on_closed(void *ctx, const char *kind, const char *why) {
  docker_attach *a = ctx;
  if (why != a->why) snprintf(a->why, sizeof a->why, "%s", why);
  finish(a, kind && strcmp(kind, "connect") == 0 ? "docker_unreachable" : kind);
}

static const rawconn_callbacks RAWCONN_CALLBACKS = {on_connected, on_data, on_closed, NULL};

/* How messages name the engine. */
static void describe(docker_attach *a, const attach_target *t, const char *authority, size_t authority_len) {
  if (t->unix_socket)
    snprintf(a->engine, sizeof a->engine, "unix://%s", t->unix_socket);
  else
    snprintf(a->engine, sizeof a->engine, "tcp://%.*s", (int)authority_len, authority);
}

docker_attach *docker_attach_start(loop *lp, const attach_target *target, const char *body,
                                   const attach_callbacks *cb, void *ctx, char *err, size_t errlen) {
  const char *authority, *path;
  size_t authority_len;
  if (!target->url || attach_split_url(target->url, &authority, &authority_len, &path) != 0) {
    snprintf(err, errlen, "the attach URL must be http:// or https://host[:port]/path, not %s",
             target->url ? target->url : "(none)");
    return NULL;
  }
  docker_attach *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  a->cb = *cb;
  a->ctx = ctx;
  a->state = CONNECTING;
  docker_demux_init(&a->demux);
  describe(a, target, authority, authority_len);
  buf request = BUF_INIT;
  int bad = target->unix_socket ? attach_request(&request, "docker", 6, path, body)
                                : attach_request(&request, authority, authority_len, path, body);
  if (bad) {
    snprintf(err, errlen, "cannot make the attach request for %s", target->url);
    buf_free(&request);
    docker_attach_free(a);
    return NULL;
  }
  char label[PATH_MAX + 64];
  snprintf(label, sizeof label, "the Docker engine at %s", a->engine);
  rawconn_target rt = {.url = target->url, .unix_socket = target->unix_socket, .tls = target->tls,
                       .connect_timeout = target->connect_timeout, .keepalive = 1, .label = label};
  a->conn = rawconn_start(lp, &rt, &RAWCONN_CALLBACKS, a, err, errlen);
  if (!a->conn || rawconn_write(a->conn, request.data, request.len) != 0) {
    buf_free(&request);
    docker_attach_free(a);
    return NULL;
  }
  buf_free(&request);
  return a;
}

int docker_attach_write(docker_attach *a, const void *data, size_t n) {
  if (a->state == CLOSED) return -1;
  return rawconn_write(a->conn, data, n);
}

void docker_attach_pause(docker_attach *a, int paused) {
  if (a && a->conn && a->state != CLOSED) rawconn_pause(a->conn, paused);
}

size_t docker_attach_pending(const docker_attach *a) { return a->conn ? rawconn_pending(a->conn) : 0; }

const char *docker_attach_engine(const docker_attach *a) { return a->engine; }

void docker_attach_free(docker_attach *a) {
  if (!a) return;
  rawconn_free(a->conn);
  buf_free(&a->head);
  free(a);
}

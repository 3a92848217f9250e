/* attach: the hijacked exec connection (see attach.h).
 *
 * Three stages. CONNECTING: rawconn.c makes the connection (and the TLS
 * handshake) on the event loop. HANDSHAKE: the upgrade request (queued at
 * the start) is written and the response head read; a websocket's refusal
 * has a body with the API server's words, read whole (REFUSED). OPEN: the
 * raw stream, both ways, demultiplexed into the engine's stdout and stderr
 * frames, or a websocket's messages into its channels (kube_exec.c). */
#include "attach.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_wire.h"
#include "kube_exec.h"
#include "rawconn.h"

#define MAX_HEAD 16384

enum attach_state { CONNECTING, HANDSHAKE, REFUSED, OPEN, CLOSED };

struct docker_attach {
  rawconn *conn;
  enum attach_state state;
  buf head;            /* the HTTP response head while upgrading */
  size_t head_scanned; /* how far a websocket's head was looked at (http_head_end) */
  docker_demux demux;
  attach_callbacks cb;
  void *ctx;
  const char *peer; /* "the Docker engine", "the Kubernetes API server" */
  /* a websocket's */
  int websocket;
  char key[WS_KEY_LEN + 1];
  kube_exec kube;
  kube_refusal *refusal; /* the answer to a refused upgrade */
  int status;             /* its HTTP status */
  buf early;         /* stdin written before the upgrade: sent once it is accepted */
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

static int ws_output(void *ctx, int stream, const char *data, size_t n) {
  docker_attach *a = ctx;
  return a->cb.on_data(a->ctx, stream, data, n);
}

static int ws_reply(void *ctx, const buf *frame) {
  docker_attach *a = ctx;
  return rawconn_write(a->conn, frame->data, frame->len);
}

static const kube_exec_events KUBE_EVENTS = {ws_output, ws_reply};

/* A websocket's messages; the server's close ends the connection, saying
 * how the command ended. */
static int deliver_ws(docker_attach *a, const char *data, size_t n) {
  int rc = kube_exec_feed(&a->kube, data, n, &KUBE_EVENTS, a);
  if (rc == 0 || a->state == CLOSED) return rc == 0 ? 0 : -1;
  char outcome[400];
  kube_exec_outcome(&a->kube, outcome, sizeof outcome);
  if (rc == 2)
    snprintf(a->why, sizeof a->why, "%s at %s ended the exec: %s", a->peer, a->engine, outcome);
  else
    snprintf(a->why, sizeof a->why, "malformed stream from %s at %s: %s", a->peer, a->engine,
             a->kube.why[0] ? a->kube.why : "its reader stopped");
  end(a, rc == 2 ? NULL : "protocol");
  return -1;
}

static int deliver(docker_attach *a, const char *data, size_t n) {
  if (a->websocket) return deliver_ws(a, data, n);
  if (docker_demux_feed(&a->demux, data, n, a->cb.on_data, a->ctx) != 0) {
    snprintf(a->why, sizeof a->why, "malformed stream from %s at %s", a->peer, a->engine);
    end(a, "protocol");
    return -1;
  }
  return 0;
}

/* The upgrade went through: what came after the head is the stream. */
static void opened(docker_attach *a, size_t head_len) {
  a->state = OPEN;
  a->cb.on_open(a->ctx);
  if (a->state == OPEN && a->early.len) rawconn_write(a->conn, a->early.data, a->early.len);
  buf_free(&a->early);
  if (a->state == OPEN && a->head.len > head_len) deliver(a, a->head.data + head_len, a->head.len - head_len);
  buf_free(&a->head);
}

/* Reads the response head; on "101"/"200" the rest is the raw stream. */
static void handshake(docker_attach *a, const char *data, size_t n) {
  buf_append(&a->head, data, n);
  int status;
  size_t head_len;
  if (!attach_response_head(a->head.data, a->head.len, &status, &head_len)) {
    if (a->head.len > MAX_HEAD) {
      snprintf(a->why, sizeof a->why, "%s at %s sent an oversized response head", a->peer, a->engine);
      end(a, "protocol");
    }
    return;
  }
  if (status != 101 && status != 200) {
    snprintf(a->why, sizeof a->why, "%s at %s refused the attach (HTTP %d): %.300s", a->peer, a->engine, status,
             a->head.data + head_len);
    end(a, "docker");
    return;
  }
  opened(a, head_len);
}

/* ---- a websocket's handshake ---- */

/* The refusal's body is all here (or the connection ended): its words. */
static void refusal_read(docker_attach *a) {
  buf message = BUF_INIT;
  kube_refusal_message(a->refusal, &message);
  snprintf(a->why, sizeof a->why, "%s at %s refused the exec (HTTP %d): %.400s", a->peer, a->engine, a->status,
           message.len ? message.data : "no message");
  buf_free(&message);
  end(a, "kubernetes");
}

static void refusal_more(docker_attach *a, const char *data, size_t n) {
  if (kube_refusal_feed(a->refusal, data, n)) refusal_read(a);
}

/* A parsed head: 101 and a good upgrade opens the stream, another status is
 * a refusal whose body follows. */
static void ws_answered(docker_attach *a, const http_message *m, size_t head_len) {
  const char *why;
  char protocol[64];
  if (m->status != 101) {
    a->status = m->status;
    a->state = REFUSED;
    a->refusal = kube_refusal_new(m);
    if (!a->refusal || m->body == HTTP_BODY_NONE) refusal_read(a);
    else if (a->head.len > head_len) refusal_more(a, a->head.data + head_len, a->head.len - head_len);
    return;
  }
  int version = 0;
  if (ws_check_upgrade(m, a->key, KUBE_EXEC_PROTOCOLS, protocol, sizeof protocol, &why) == 0 &&
      !(version = kube_exec_version(protocol)))
    why = "the answer chose no channel protocol (v5.channel.k8s.io or v4.channel.k8s.io)";
  if (!version) {
    snprintf(a->why, sizeof a->why, "%s at %s answered the WebSocket upgrade wrongly: %s", a->peer, a->engine, why);
    end(a, "protocol");
    return;
  }
  kube_exec_init(&a->kube, version);
  opened(a, head_len);
}

static void ws_handshake(docker_attach *a, const char *data, size_t n) {
  buf_append(&a->head, data, n);
  long head_len = http_head_end(a->head.data, a->head.len, &a->head_scanned);
  const char *why = "an oversized response head";
  http_message m;
  memset(&m, 0, sizeof m);
  if (head_len == 0) return;
  if (head_len > 0 && http_response_parse(a->head.data, (size_t)head_len, "GET", &m, &why) == 0) {
    ws_answered(a, &m, (size_t)head_len);
  } else {
    snprintf(a->why, sizeof a->why, "%s at %s sent a malformed response head: %s", a->peer, a->engine, why);
    end(a, "protocol");
  }
  http_message_free(&m);
}

/* ---- the connection ---- */

static void on_connected(void *ctx) {
  docker_attach *a = ctx;
  a->state = HANDSHAKE;
}

/* The engine ended its side. */
static void ended(docker_attach *a) {
  if (a->state == REFUSED) {
    refusal_read(a);
    return;
  }
  int open = a->state == OPEN;
  char outcome[400] = "";
  if (open && a->websocket) kube_exec_outcome(&a->kube, outcome, sizeof outcome);
  if (outcome[0])
    snprintf(a->why, sizeof a->why, "%s at %s ended the exec: %s", a->peer, a->engine, outcome);
  else
    snprintf(a->why, sizeof a->why, open ? "%s at %s ended the stream" : "%s at %s closed the connection before it answered",
             a->peer, a->engine);
  end(a, open ? NULL : "network");
}

static int on_data(void *ctx, const char *data, size_t n) {
  docker_attach *a = ctx;
  if (n == 0) {
    ended(a);
    return -1;
  }
  if (a->state == HANDSHAKE && a->websocket)
    ws_handshake(a, data, n);
  else if (a->state == HANDSHAKE)
    handshake(a, data, n);
  else if (a->state == REFUSED)
    refusal_more(a, data, n);
  else if (deliver(a, data, n) != 0)
    return -1;
  return a->state == CLOSED ? -1 : 0;
}

/* rawconn's own failures keep its words; "connect" is the engine's kind of it. */
static void on_closed(void *ctx, const char *kind, const char *why) {
  docker_attach *a = ctx;
  if (why != a->why) snprintf(a->why, sizeof a->why, "%s", why);
  if (kind && strcmp(kind, "connect") == 0) kind = a->websocket ? "cluster_unreachable" : "docker_unreachable";
  finish(a, kind);
}

static const rawconn_callbacks RAWCONN_CALLBACKS = {on_connected, on_data, on_closed, NULL};

/* How messages name the engine. */
static void describe(docker_attach *a, const attach_target *t, const char *authority, size_t authority_len) {
  a->peer = t->websocket ? "the Kubernetes API server" : "the Docker engine";
  if (t->unix_socket)
    snprintf(a->engine, sizeof a->engine, "unix://%s", t->unix_socket);
  else if (t->websocket)
    snprintf(a->engine, sizeof a->engine, "%.*s%.*s", (int)(strchr(t->url, ':') - t->url + 3), t->url,
             (int)authority_len, authority);
  else
    snprintf(a->engine, sizeof a->engine, "tcp://%.*s", (int)authority_len, authority);
}

/* The upgrade request: Docker's POST with its body, or a websocket's GET. */
static int make_request(docker_attach *a, const attach_target *t, buf *out, const char *authority,
                        size_t authority_len, const char *path, const char *body) {
  if (!t->websocket)
    return t->unix_socket ? attach_request(out, "docker", 6, path, body)
                          : attach_request(out, authority, authority_len, path, body);
  if (ws_make_key(a->key) != 0) return -1;
  return ws_request(out, authority, authority_len, path, a->key, KUBE_EXEC_PROTOCOLS, t->headers);
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
  a->websocket = target->websocket;
  docker_demux_init(&a->demux);
  describe(a, target, authority, authority_len);
  buf request = BUF_INIT;
  if (make_request(a, target, &request, authority, authority_len, path, body) != 0) {
    snprintf(err, errlen, "cannot make the %s request for %s", a->websocket ? "exec" : "attach", target->url);
    buf_free(&request);
    docker_attach_free(a);
    return NULL;
  }
  char label[PATH_MAX + 64];
  snprintf(label, sizeof label, "%s at %s", a->peer, a->engine);
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
  if (!a->websocket) return rawconn_write(a->conn, data, n);
  if (a->state != OPEN) return kube_exec_stdin(&a->early, data, n);
  buf frames = BUF_INIT;
  int rc = kube_exec_stdin(&frames, data, n);
  if (rc == 0) rc = rawconn_write(a->conn, frames.data, frames.len);
  buf_free(&frames);
  return rc;
}

void docker_attach_pause(docker_attach *a, int paused) {
  if (a && a->conn && a->state != CLOSED) rawconn_pause(a->conn, paused);
}

size_t docker_attach_pending(const docker_attach *a) { return (a->conn ? rawconn_pending(a->conn) : 0) + a->early.len; }

const char *docker_attach_engine(const docker_attach *a) { return a->engine; }

int docker_attach_status(const docker_attach *a) { return a->status; }

void docker_attach_free(docker_attach *a) {
  if (!a) return;
  rawconn_free(a->conn);
  buf_free(&a->head);
  buf_free(&a->early);
  kube_refusal_free(a->refusal);
  kube_exec_free(&a->kube);
  free(a);
}

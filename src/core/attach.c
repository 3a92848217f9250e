/* attach: the hijacked exec connection (see attach.h).
 *
 * Three stages. CONNECTING: libcurl makes the connection (and the TLS
 * handshake) in a multi handle of this attach's own, driven by the event
 * loop through curl's socket and timer callbacks, so nothing blocks; the
 * easy handle stays in that multi until the end, because removing a
 * CONNECT_ONLY handle closes its connection. HANDSHAKE: the upgrade request
 * is written and the response head read. OPEN: the raw stream, both ways.
 * From CONNECTING on, every byte goes through curl_easy_send/recv, so a
 * unix socket, TCP and TLS are the same code. */
#include "attach.h"

#include <ctype.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker_wire.h"
#include "http.h"

#define MAX_HEAD 16384
#define DEFAULT_CONNECT_TIMEOUT 10.0
/* The sockets curl watches while it connects: the connection (two at once
 * when it tries IPv6 and IPv4 together) and its resolver's wakeup pair. */
#define CONNECT_SOCKETS 4

enum attach_state { CONNECTING, HANDSHAKE, OPEN, CLOSED };

typedef struct curl_socket_watch {
  loop_watch watch;
  struct docker_attach *a;
} curl_socket_watch;

struct docker_attach {
  loop *lp;
  CURLM *multi; /* its own: the connection lives while the easy handle stays in it */
  CURL *easy;
  curl_socket_watch connecting[CONNECT_SOCKETS];
  loop_timer curl_timer; /* curl's timeout while connecting */
  loop_watch watch;      /* the connection, once made */
  enum attach_state state;
  /* What is being written: nothing is appended to it until it is written
   * whole, so a TLS write that had to wait is retried with the same bytes
   * at the same address, as OpenSSL requires. */
  buf sending;
  size_t sent;
  buf queue; /* written by the owner meanwhile */
  buf head;  /* the HTTP response head while upgrading */
  buf tls_files; /* " (CA file X, ...)" for messages about TLS */
  docker_demux demux;
  attach_callbacks cb;
  void *ctx;
  char engine[PATH_MAX + 16];
  char errbuf[CURL_ERROR_SIZE];
  char why[PATH_MAX + CURL_ERROR_SIZE + 512];
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

/* Lets go of curl (which closes the connection) and of every watch and
 * timer: curl's callbacks may still run while it cleans up, so they go last. */
static void stop_connecting(docker_attach *a) {
  for (int i = 0; i < CONNECT_SOCKETS; i++) loop_watch_stop(a->lp, &a->connecting[i].watch);
  loop_timer_stop(a->lp, &a->curl_timer);
}

static void release(docker_attach *a) {
  if (a->multi && a->easy) curl_multi_remove_handle(a->multi, a->easy);
  if (a->easy) curl_easy_cleanup(a->easy);
  if (a->multi) curl_multi_cleanup(a->multi);
  a->easy = NULL;
  a->multi = NULL;
  stop_connecting(a);
  loop_watch_stop(a->lp, &a->watch);
}

/* The connection is over: why is a->why. */
static void finish(docker_attach *a, const char *kind) {
  if (a->state == CLOSED) return;
  a->state = CLOSED;
  release(a);
  a->cb.on_close(a->ctx, kind, a->why);
}

static const char *curl_detail(docker_attach *a, CURLcode rc) {
  return a->errbuf[0] ? a->errbuf : curl_easy_strerror(rc);
}

static void broke(docker_attach *a, CURLcode rc) {
  snprintf(a->why, sizeof a->why, "the connection to the Docker engine at %s broke: %s", a->engine,
           curl_detail(a, rc));
  finish(a, "network");
}

/* ---- the stream ---- */

static size_t pending(const docker_attach *a) { return a->sending.len - a->sent + a->queue.len; }

static void update_interest(docker_attach *a) {
  a->watch.events = (short)(POLLIN | (pending(a) ? POLLOUT : 0));
}

static void flush_out(docker_attach *a) {
  if (a->state != HANDSHAKE && a->state != OPEN) return; /* queued until connected */
  for (;;) {
    if (a->sent == a->sending.len) {
      buf_clear(&a->sending);
      a->sent = 0;
      if (a->queue.len == 0) break;
      buf next = a->sending;
      a->sending = a->queue;
      a->queue = next;
    }
    size_t n = 0;
    CURLcode rc = curl_easy_send(a->easy, a->sending.data + a->sent, a->sending.len - a->sent, &n);
    if (rc == CURLE_AGAIN) break;
    if (rc != CURLE_OK) {
      broke(a, rc);
      return;
    }
    if (n == 0) break;
    a->sent += n;
  }
  update_interest(a);
}

static int deliver(docker_attach *a, const char *data, size_t n) {
  if (docker_demux_feed(&a->demux, data, n, a->cb.on_data, a->ctx) != 0) {
    snprintf(a->why, sizeof a->why, "malformed stream from the Docker engine at %s", a->engine);
    finish(a, "protocol");
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
      finish(a, "protocol");
    }
    return;
  }
  if (status != 101 && status != 200) {
    snprintf(a->why, sizeof a->why, "the Docker engine at %s refused the attach (HTTP %d): %.300s", a->engine,
             status, a->head.data + head_len);
    finish(a, "docker");
    return;
  }
  a->state = OPEN;
  a->cb.on_open(a->ctx);
  if (a->state == OPEN && a->head.len > head_len) deliver(a, a->head.data + head_len, a->head.len - head_len);
  buf_free(&a->head);
}

/* Reads until the socket has nothing more: curl_easy_recv may hold bytes
 * TLS already decrypted, which a poll would not announce. */
static void on_ready(loop_watch *w, short revents) {
  docker_attach *a = (docker_attach *)((char *)w - offsetof(docker_attach, watch));
  if (revents & POLLOUT) flush_out(a);
  if (a->state == CLOSED || !(revents & (POLLIN | POLLHUP | POLLERR))) return;
  char chunk[65536];
  for (;;) {
    size_t n = 0;
    CURLcode rc = curl_easy_recv(a->easy, chunk, sizeof chunk, &n);
    if (rc == CURLE_AGAIN) return;
    if (rc != CURLE_OK) {
      broke(a, rc);
      return;
    }
    if (n == 0) {
      int open = a->state == OPEN;
      snprintf(a->why, sizeof a->why, open ? "the Docker engine at %s ended the stream"
                                           : "the Docker engine at %s closed the connection before it answered",
               a->engine);
      finish(a, open ? NULL : "network");
      return;
    }
    if (a->state == HANDSHAKE)
      handshake(a, chunk, n);
    else if (deliver(a, chunk, n) != 0)
      return;
    if (a->state == CLOSED) return;
  }
}

/* ---- connecting, through curl's own multi handle ---- */

static void connect_failed(docker_attach *a, CURLcode rc) {
  const char *kind = http_curl_kind(rc);
  if (kind && strcmp(kind, "tls") == 0) {
    snprintf(a->why, sizeof a->why, "TLS with the Docker engine at %s failed: %s%s", a->engine, curl_detail(a, rc),
             a->tls_files.data ? a->tls_files.data : "");
    finish(a, "tls");
    return;
  }
  snprintf(a->why, sizeof a->why, "cannot connect to the Docker engine at %s: %s", a->engine, curl_detail(a, rc));
  finish(a, "docker_unreachable");
}

static void connected(docker_attach *a) {
  stop_connecting(a);
  curl_socket_t fd = CURL_SOCKET_BAD;
  curl_easy_getinfo(a->easy, CURLINFO_ACTIVESOCKET, &fd);
  a->errbuf[0] = '\0';
  if (fd == CURL_SOCKET_BAD) {
    snprintf(a->why, sizeof a->why, "cannot connect to the Docker engine at %s: curl made no connection", a->engine);
    finish(a, "docker_unreachable");
    return;
  }
  a->state = HANDSHAKE;
  a->watch.fd = fd;
  a->watch.ready = on_ready;
  update_interest(a);
  if (loop_watch_start(a->lp, &a->watch) != 0) {
    snprintf(a->why, sizeof a->why, "out of memory watching the connection to the Docker engine at %s", a->engine);
    finish(a, "docker_unreachable");
    return;
  }
  flush_out(a);
}

/* After curl ran: has the connection been made, or has it failed? */
static void check_connected(docker_attach *a) {
  CURLMsg *msg;
  int queued;
  while (a->state == CONNECTING && (msg = curl_multi_info_read(a->multi, &queued)) != NULL) {
    if (msg->msg != CURLMSG_DONE) continue;
    if (msg->data.result != CURLE_OK)
      connect_failed(a, msg->data.result);
    else
      connected(a);
  }
}

static void on_curl_socket_ready(loop_watch *w, short revents) {
  curl_socket_watch *s = (curl_socket_watch *)w;
  docker_attach *a = s->a;
  int ev = (revents & POLLIN ? CURL_CSELECT_IN : 0) | (revents & POLLOUT ? CURL_CSELECT_OUT : 0) |
           (revents & (POLLERR | POLLHUP) ? CURL_CSELECT_ERR : 0);
  int running;
  curl_multi_socket_action(a->multi, w->fd, ev, &running);
  check_connected(a);
}

static void on_curl_timer(loop_timer *t) {
  docker_attach *a = (docker_attach *)((char *)t - offsetof(docker_attach, curl_timer));
  int running;
  curl_multi_socket_action(a->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  check_connected(a);
}

/* CURLMOPT_SOCKETFUNCTION: which sockets curl waits on, for what. */
static int curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  (void)easy, (void)socketp;
  docker_attach *a = userp;
  curl_socket_watch *found = NULL, *idle = NULL;
  for (int i = 0; i < CONNECT_SOCKETS; i++) {
    curl_socket_watch *s = &a->connecting[i];
    if (s->watch.active && s->watch.fd == fd) found = s;
    if (!s->watch.active && !idle) idle = s;
  }
  if (what == CURL_POLL_REMOVE) {
    if (found) loop_watch_stop(a->lp, &found->watch);
    return 0;
  }
  if (!found) found = idle;
  if (!found) return -1;
  found->watch.fd = fd;
  found->watch.events = (short)((what & CURL_POLL_IN ? POLLIN : 0) | (what & CURL_POLL_OUT ? POLLOUT : 0));
  found->watch.ready = on_curl_socket_ready;
  return loop_watch_start(a->lp, &found->watch);
}

/* CURLMOPT_TIMERFUNCTION: when curl wants to be called without I/O. */
static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
  (void)multi;
  docker_attach *a = userp;
  if (timeout_ms < 0)
    loop_timer_stop(a->lp, &a->curl_timer);
  else
    loop_timer_start(a->lp, &a->curl_timer, (double)timeout_ms / 1000.0);
  return 0;
}

static void set_curl_options(docker_attach *a, const attach_target *t) {
  CURL *e = a->easy;
  double connect_timeout = t->connect_timeout > 0 ? t->connect_timeout : DEFAULT_CONNECT_TIMEOUT;
  curl_easy_setopt(e, CURLOPT_URL, t->url);
  curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, a->errbuf);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_timeout * 1000));
  /* an engine that vanishes without closing the connection is noticed */
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
  if (t->unix_socket) curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, t->unix_socket);
  http_set_tls(e, t->insecure, t->ca_file, t->cert_file, t->key_file);
  curl_multi_setopt(a->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
  curl_multi_setopt(a->multi, CURLMOPT_SOCKETDATA, a);
  curl_multi_setopt(a->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
  curl_multi_setopt(a->multi, CURLMOPT_TIMERDATA, a);
}

/* How messages name the engine, and the TLS files they mention. */
static void describe(docker_attach *a, const attach_target *t, const char *authority, size_t authority_len) {
  if (t->unix_socket)
    snprintf(a->engine, sizeof a->engine, "unix://%s", t->unix_socket);
  else
    snprintf(a->engine, sizeof a->engine, "tcp://%.*s", (int)authority_len, authority);
  if (!t->unix_socket && (t->ca_file || t->cert_file || t->key_file))
    buf_printf(&a->tls_files, " (CA file %s, certificate %s, key %s)", t->ca_file ? t->ca_file : "the system's",
               t->cert_file ? t->cert_file : "none", t->key_file ? t->key_file : "none");
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
  a->lp = lp;
  a->cb = *cb;
  a->ctx = ctx;
  a->state = CONNECTING;
  docker_demux_init(&a->demux);
  loop_timer_init(&a->curl_timer, on_curl_timer);
  for (int i = 0; i < CONNECT_SOCKETS; i++) a->connecting[i].a = a;
  describe(a, target, authority, authority_len);
  int bad = target->unix_socket ? attach_request(&a->queue, "docker", 6, path, body)
                                : attach_request(&a->queue, authority, authority_len, path, body);
  if (bad) {
    snprintf(err, errlen, "cannot make the attach request for %s", target->url);
    docker_attach_free(a);
    return NULL;
  }
  a->easy = curl_easy_init();
  a->multi = a->easy ? curl_multi_init() : NULL;
  if (!a->multi) {
    snprintf(err, errlen, "cannot create a curl handle");
    docker_attach_free(a);
    return NULL;
  }
  set_curl_options(a, target);
  if (curl_multi_add_handle(a->multi, a->easy) != CURLM_OK) {
    snprintf(err, errlen, "cannot start connecting to the Docker engine at %s", a->engine);
    docker_attach_free(a);
    return NULL;
  }
  return a;
}

int docker_attach_write(docker_attach *a, const void *data, size_t n) {
  if (a->state == CLOSED) return -1;
  if (buf_append(&a->queue, data, n) != 0) return -1;
  flush_out(a);
  return a->state == CLOSED ? -1 : 0;
}

size_t docker_attach_pending(const docker_attach *a) { return pending(a); }

const char *docker_attach_engine(const docker_attach *a) { return a->engine; }

void docker_attach_free(docker_attach *a) {
  if (!a) return;
  if (a->state != CLOSED) release(a);
  buf_free(&a->sending);
  buf_free(&a->queue);
  buf_free(&a->head);
  buf_free(&a->tls_files);
  free(a);
}

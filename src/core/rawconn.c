/* rawconn: one raw byte stream made by libcurl (see rawconn.h).
 *
 * Two stages. CONNECTING: libcurl makes the connection (and the TLS
 * handshake) in a multi handle of the connection's own, driven by the event
 * loop through curl's socket and timer callbacks, so nothing blocks; the easy
 * handle stays in that multi until the end, because removing a CONNECT_ONLY
 * handle closes its connection. OPEN: the stream, both ways, through
 * curl_easy_send/recv. */
#include "rawconn.h"

#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "http.h"
#include "http_head.h"

#define DEFAULT_CONNECT_TIMEOUT 10.0
/* The sockets curl watches while it connects: the connection (two at once
 * when it tries IPv6 and IPv4 together) and its resolver's wakeup pair. */
#define CONNECT_SOCKETS 4

enum rawconn_state { CONNECTING, OPEN, CLOSED };

typedef struct curl_socket_watch {
  loop_watch watch;
  struct rawconn *c;
} curl_socket_watch;

struct rawconn {
  loop *lp;
  CURLM *multi; /* its own: the connection lives while the easy handle stays in it */
  CURL *easy;
  struct curl_slist *resolve;
  curl_socket_watch connecting[CONNECT_SOCKETS];
  loop_timer curl_timer; /* curl's timeout while connecting */
  loop_timer resume;     /* reads again after a pause: TLS may hold bytes a poll would not announce */
  loop_watch watch;      /* the connection, once made */
  enum rawconn_state state;
  int paused, eof, shutdown_asked, tls;
  /* What is being written: nothing is appended to it until it is written
   * whole, so a TLS write that had to wait is retried with the same bytes
   * at the same address, as OpenSSL requires. */
  buf sending;
  size_t sent;
  buf queue; /* written by the owner meanwhile */
  buf tls_files; /* " (CA file X, ...)" for messages about TLS */
  rawconn_callbacks cb;
  void *ctx;
  int (*vet)(void *ctx, const struct sockaddr *address, char *why, size_t whylen);
  void *vet_ctx;
  char refused[256]; /* why vet refused the last address */
  char label[512];
  char address[64];
  char errbuf[CURL_ERROR_SIZE];
  char why[1024 + CURL_ERROR_SIZE];
};

/* ---- the end ---- */

/* Lets go of every watch and timer curl asked for: curl's callbacks may
 * still run while it cleans up, so they go last. */
static void stop_connecting(rawconn *c) {
  for (int i = 0; i < CONNECT_SOCKETS; i++) loop_watch_stop(c->lp, &c->connecting[i].watch);
  loop_timer_stop(c->lp, &c->curl_timer);
}

static void release(rawconn *c) {
  if (c->multi && c->easy) curl_multi_remove_handle(c->multi, c->easy);
  if (c->easy) curl_easy_cleanup(c->easy);
  if (c->multi) curl_multi_cleanup(c->multi);
  c->easy = NULL;
  c->multi = NULL;
  stop_connecting(c);
  loop_timer_stop(c->lp, &c->resume);
  loop_watch_stop(c->lp, &c->watch);
}

/* The connection is over: why is c->why. */
static void finish(rawconn *c, const char *kind) {
  if (c->state == CLOSED) return;
  c->state = CLOSED;
  release(c);
  c->cb.on_close(c->ctx, kind, c->why);
}

void rawconn_end(rawconn *c, const char *kind, const char *why) {
  snprintf(c->why, sizeof c->why, "%s", why);
  finish(c, kind);
}

static const char *curl_detail(rawconn *c, CURLcode rc) { return c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc); }

static void broke(rawconn *c, CURLcode rc) {
  snprintf(c->why, sizeof c->why, "the connection to %s broke: %s", c->label, curl_detail(c, rc));
  finish(c, "network");
}

/* ---- the stream ---- */

static size_t pending(const rawconn *c) { return c->sending.len - c->sent + c->queue.len; }

static void update_interest(rawconn *c) {
  c->watch.events = (short)((c->paused || c->eof ? 0 : POLLIN) | (pending(c) ? POLLOUT : 0));
}

/* A shutdown asked for happens once everything queued is written. */
static void shutdown_if_flushed(rawconn *c) {
  if (!c->shutdown_asked || pending(c) || c->tls || c->state != OPEN) return;
  c->shutdown_asked = 0;
  shutdown(c->watch.fd, SHUT_WR);
}

static void flush_out(rawconn *c) {
  if (c->state != OPEN) return; /* queued until connected */
  int had = pending(c) > 0;
  for (;;) {
    if (c->sent == c->sending.len) {
      buf_clear(&c->sending);
      c->sent = 0;
      if (c->queue.len == 0) break;
      buf next = c->sending;
      c->sending = c->queue;
      c->queue = next;
    }
    size_t n = 0;
    CURLcode rc = curl_easy_send(c->easy, c->sending.data + c->sent, c->sending.len - c->sent, &n);
    if (rc == CURLE_AGAIN) break;
    if (rc != CURLE_OK) {
      broke(c, rc);
      return;
    }
    if (n == 0) break;
    c->sent += n;
  }
  update_interest(c);
  shutdown_if_flushed(c);
  if (had && !pending(c) && c->cb.on_drained) c->cb.on_drained(c->ctx);
}

/* Reads until the socket has nothing more (or the owner paused): curl_easy_recv
 * may hold bytes TLS already decrypted, which a poll would not announce. */
static void read_available(rawconn *c) {
  char chunk[65536];
  while (c->state == OPEN && !c->paused && !c->eof) {
    size_t n = 0;
    CURLcode rc = curl_easy_recv(c->easy, chunk, sizeof chunk, &n);
    if (rc == CURLE_AGAIN) return;
    if (rc != CURLE_OK) {
      broke(c, rc);
      return;
    }
    if (n == 0) {
      c->eof = 1;
      update_interest(c);
    }
    if (c->cb.on_data(c->ctx, chunk, n) != 0) return;
  }
}

static void on_ready(loop_watch *w, short revents) {
  rawconn *c = (rawconn *)((char *)w - offsetof(rawconn, watch));
  if (revents & POLLOUT) flush_out(c);
  if (c->state == OPEN && (revents & (POLLIN | POLLHUP | POLLERR))) read_available(c);
}

static void on_resume(loop_timer *t) { read_available((rawconn *)((char *)t - offsetof(rawconn, resume))); }

void rawconn_pause(rawconn *c, int paused) {
  if (c->paused == paused || c->state == CLOSED) return;
  c->paused = paused;
  if (c->state != OPEN) return;
  update_interest(c);
  if (!paused) loop_timer_start(c->lp, &c->resume, 0);
}

void rawconn_shutdown(rawconn *c) {
  c->shutdown_asked = 1;
  shutdown_if_flushed(c);
}

/* ---- connecting, through curl's own multi handle ---- */

static void connect_failed(rawconn *c, CURLcode rc) {
  const char *kind = http_curl_kind(rc);
  if (kind && strcmp(kind, "tls") == 0) {
    snprintf(c->why, sizeof c->why, "TLS with %s failed: %s%s", c->label, curl_detail(c, rc),
             c->tls_files.data ? c->tls_files.data : "");
    finish(c, "tls");
    return;
  }
  if (c->refused[0])
    snprintf(c->why, sizeof c->why, "cannot connect to %s: %s", c->label, c->refused);
  else
    snprintf(c->why, sizeof c->why, "cannot connect to %s: %s", c->label, curl_detail(c, rc));
  finish(c, c->refused[0] ? "denied" : "connect");
}

static void connected(rawconn *c) {
  stop_connecting(c);
  curl_socket_t fd = CURL_SOCKET_BAD;
  curl_easy_getinfo(c->easy, CURLINFO_ACTIVESOCKET, &fd);
  char *ip = NULL;
  if (curl_easy_getinfo(c->easy, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip)
    snprintf(c->address, sizeof c->address, "%s", ip);
  c->errbuf[0] = '\0';
  if (fd == CURL_SOCKET_BAD) {
    snprintf(c->why, sizeof c->why, "cannot connect to %s: curl made no connection", c->label);
    finish(c, "connect");
    return;
  }
  c->state = OPEN;
  c->watch.fd = fd;
  c->watch.ready = on_ready;
  update_interest(c);
  if (loop_watch_start(c->lp, &c->watch) != 0) {
    snprintf(c->why, sizeof c->why, "out of memory watching the connection to %s", c->label);
    finish(c, "connect");
    return;
  }
  c->cb.on_connected(c->ctx);
  if (c->state != OPEN) return;
  flush_out(c);
  if (c->state == OPEN) read_available(c); /* what came with the handshake */
}

/* After curl ran: has the connection been made, or has it failed? */
static void check_connected(rawconn *c) {
  CURLMsg *msg;
  int queued;
  while (c->state == CONNECTING && (msg = curl_multi_info_read(c->multi, &queued)) != NULL) {
    if (msg->msg != CURLMSG_DONE) continue;
    if (msg->data.result != CURLE_OK)
      connect_failed(c, msg->data.result);
    else
      connected(c);
  }
}

static void on_curl_socket_ready(loop_watch *w, short revents) {
  curl_socket_watch *s = (curl_socket_watch *)w;
  rawconn *c = s->c;
  int ev = (revents & POLLIN ? CURL_CSELECT_IN : 0) | (revents & POLLOUT ? CURL_CSELECT_OUT : 0) |
           (revents & (POLLERR | POLLHUP) ? CURL_CSELECT_ERR : 0);
  int running;
  curl_multi_socket_action(c->multi, w->fd, ev, &running);
  check_connected(c);
}

static void on_curl_timer(loop_timer *t) {
  rawconn *c = (rawconn *)((char *)t - offsetof(rawconn, curl_timer));
  int running;
  curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  check_connected(c);
}

/* CURLMOPT_SOCKETFUNCTION: which sockets curl waits on, for what. */
static int curl_socket_cb(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
  (void)easy, (void)socketp;
  rawconn *c = userp;
  curl_socket_watch *found = NULL, *idle = NULL;
  for (int i = 0; i < CONNECT_SOCKETS; i++) {
    curl_socket_watch *s = &c->connecting[i];
    if (s->watch.active && s->watch.fd == fd) found = s;
    if (!s->watch.active && !idle) idle = s;
  }
  if (what == CURL_POLL_REMOVE) {
    if (found) loop_watch_stop(c->lp, &found->watch);
    return 0;
  }
  if (!found) found = idle;
  if (!found) return -1;
  found->watch.fd = fd;
  found->watch.events = (short)((what & CURL_POLL_IN ? POLLIN : 0) | (what & CURL_POLL_OUT ? POLLOUT : 0));
  found->watch.ready = on_curl_socket_ready;
  return loop_watch_start(c->lp, &found->watch);
}

/* CURLMOPT_TIMERFUNCTION: when curl wants to be called without I/O. */
static int curl_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
  (void)multi;
  rawconn *c = userp;
  if (timeout_ms < 0)
    loop_timer_stop(c->lp, &c->curl_timer);
  else
    loop_timer_start(c->lp, &c->curl_timer, (double)timeout_ms / 1000.0);
  return 0;
}

/* CURLOPT_OPENSOCKETFUNCTION: the owner vets each address before curl
 * connects to it, so the address checked is the address used (a name that
 * resolves again to something else meanwhile changes nothing). */
static curl_socket_t open_socket_cb(void *userp, curlsocktype purpose, struct curl_sockaddr *address) {
  rawconn *c = userp;
  if (purpose == CURLSOCKTYPE_IPCXN && c->vet &&
      !c->vet(c->vet_ctx, (const struct sockaddr *)&address->addr, c->refused, sizeof c->refused))
    return CURL_SOCKET_BAD;
  return socket(address->family, address->socktype, address->protocol);
}

static int set_curl_options(rawconn *c, const rawconn_target *t) {
  CURL *e = c->easy;
  double connect_timeout = t->connect_timeout > 0 ? t->connect_timeout : DEFAULT_CONNECT_TIMEOUT;
  curl_easy_setopt(e, CURLOPT_URL, t->url);
  curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  /* rounded up, at least 1 ms: 0 would mean libcurl's default of 300 s */
  long connect_ms = (long)(connect_timeout * 1000 + 0.999);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms < 1 ? 1L : connect_ms);
  curl_easy_setopt(e, CURLOPT_PROXY, ""); /* never the host's own proxy variables */
  /* the stream is ours: TLS must not agree on HTTP/2 by ALPN (a Go server such as
   * Kubernetes' API server would then speak h2 frames to our HTTP/1.1 upgrade) */
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
  if (t->keepalive) {
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 10L);
  }
  if (t->unix_socket) curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, t->unix_socket);
  if (t->resolve) {
    c->resolve = curl_slist_append(NULL, t->resolve);
    if (!c->resolve) return -1;
    curl_easy_setopt(e, CURLOPT_RESOLVE, c->resolve);
  }
  if (t->vet) {
    c->vet = t->vet;
    c->vet_ctx = t->vet_ctx;
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_socket_cb);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
  }
  http_set_tls(e, &t->tls);
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, curl_socket_cb);
  curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, curl_timer_cb);
  curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
  return 0;
}

/* How a message names where a PEM came from. */
static void pem_source(buf *out, const char *what, const char *file, const char *pem, const char *neither) {
  if (file) buf_printf(out, "%s file %s", what, file);
  else buf_printf(out, "%s %s", what, pem ? "given as PEM text" : neither);
}

/* The TLS files messages mention. */
static void describe_tls(rawconn *c, const rawconn_target *t) {
  c->tls = strncmp(t->url, "https://", 8) == 0;
  const http_tls *k = &t->tls;
  if (!t->unix_socket && (k->ca_file || k->cert_file || k->key_file || k->ca_pem || k->cert_pem))
  {
    buf_append_str(&c->tls_files, " (");
    pem_source(&c->tls_files, "CA", k->ca_file, k->ca_pem, "the system's");
    pem_source(&c->tls_files, ", certificate", k->cert_file, k->cert_pem, "none");
    pem_source(&c->tls_files, ", key", k->key_file, k->key_pem, "none");
    buf_append_str(&c->tls_files, ")");
  }
}

rawconn *rawconn_start(loop *lp, const rawconn_target *target, const rawconn_callbacks *cb, void *ctx, char *err,
                       size_t errlen) {
  rawconn *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  c->lp = lp;
  c->cb = *cb;
  c->ctx = ctx;
  c->state = CONNECTING;
  loop_timer_init(&c->curl_timer, on_curl_timer);
  loop_timer_init(&c->resume, on_resume);
  for (int i = 0; i < CONNECT_SOCKETS; i++) c->connecting[i].c = c;
  snprintf(c->label, sizeof c->label, "%s", target->label ? target->label : target->url);
  describe_tls(c, target);
  c->easy = curl_easy_init();
  c->multi = c->easy ? curl_multi_init() : NULL;
  if (!c->multi || set_curl_options(c, target) != 0) {
    snprintf(err, errlen, "cannot create a curl handle");
    rawconn_free(c);
    return NULL;
  }
  if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK) {
    snprintf(err, errlen, "cannot start connecting to %s", c->label);
    rawconn_free(c);
    return NULL;
  }
  return c;
}

int rawconn_write(rawconn *c, const void *data, size_t n) {
  if (c->state == CLOSED) return -1;
  if (buf_append(&c->queue, data, n) != 0) return -1;
  flush_out(c);
  return c->state == CLOSED ? -1 : 0;
}

size_t rawconn_pending(const rawconn *c) { return pending(c); }

const char *rawconn_address(const rawconn *c) { return c->address; }

int rawconn_open(const rawconn *c) { return c->state == OPEN; }

void rawconn_free(rawconn *c) {
  if (!c) return;
  if (c->state != CLOSED) release(c);
  curl_slist_free_all(c->resolve);
  buf_free(&c->sending);
  buf_free(&c->queue);
  buf_free(&c->tls_files);
  free(c);
}

/* ---- targets ---- */

int rawconn_url(const char *host, int port, int tls, const char *pin, char *url, char *resolve, char *err,
                size_t errlen) {
  http_host h;
  const char *why = NULL;
  if (!host || port < 1 || port > 65535 || http_host_parse(host, strlen(host), &h, &why) < 0 ||
      strcmp(h.name, host) != 0) {
    snprintf(err, errlen, "%s:%d is not a canonical host and port", host ? host : "(none)", port);
    return -1;
  }
  const char *open = h.family == 6 ? "[" : "", *close = h.family == 6 ? "]" : "";
  snprintf(url, RAWCONN_URL_MAX, "%s://%s%s%s:%d", tls ? "https" : "http", open, h.name, close, port);
  resolve[0] = '\0';
  if (!pin) return 0;
  unsigned char addr[16];
  int v6 = strchr(pin, ':') != NULL;
  if (inet_pton(v6 ? AF_INET6 : AF_INET, pin, addr) != 1) {
    snprintf(err, errlen, "the pin %s is not an IP address", pin);
    return -1;
  }
  snprintf(resolve, RAWCONN_URL_MAX, "%s:%d:%s%s%s", h.name, port, v6 ? "[" : "", pin, v6 ? "]" : "");
  return 0;
}

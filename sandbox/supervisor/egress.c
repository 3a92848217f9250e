/* egress: the relay of sandbox connections to the host (see egress.h). One
 * thread, one poll over stdin, stdout, the listeners and every client socket,
 * all non-blocking: what waits for the host (outbox) and for a client (a
 * connection's inbox) waits here, bounded by the window and OUTBOX_HIGH. */
#include "egress.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress_frames.h"
#include "frames.h"

#define READ_CHUNK (64 * 1024)         /* one read from a socket or stdin */
#define OUTBOX_HIGH (256 * 1024)       /* clients are not read while this much waits for the host */
#define INBOX_KEEP (256 * 1024)        /* an emptied inbox keeps its memory up to this */
#define CLOSE_GRACE_MS 5000            /* a host's C waits this long for the client to take its bytes */

typedef struct conn {
  long long id;
  int fd;                 /* -1 once closed (freed at the end of the round) */
  size_t unacked;         /* bytes of our D the host has not K'd yet */
  buf inbox;              /* the host's D bytes, from inbox_sent on not yet in the socket */
  size_t inbox_sent;
  int client_eof;         /* the client finished sending (H sent) */
  int host_shut, shut_done; /* the host said H; shutdown(SHUT_WR) was done */
  int host_close;         /* the host said C */
  long long close_deadline;
} conn;

typedef struct relay {
  int listeners[2];
  int nlisteners;
  conn *conns[EGRESS_MAX_CONNS]; /* in id order */
  size_t nconns;
  long long last_id;
  buf outbox;                    /* messages for the host, from outbox_sent on not yet written */
  size_t outbox_sent;
  eg_parser parser;
  char refusal[128];             /* why a host message is not the protocol */
  int exit_code;                 /* -1 while relaying */
  char chunk[READ_CHUNK];
} relay;

/* ---- queues ---- */

static size_t pending(const buf *b, size_t sent) { return b->len - sent; }

/* Marks n more bytes of b written; an emptied queue starts again at 0. */
static void written(buf *b, size_t *sent, size_t n) {
  *sent += n;
  if (*sent < b->len) return;
  buf_clear(b);
  *sent = 0;
}

/* Drops what was written before appending, once it is half the queue. */
static void compact(buf *b, size_t *sent) {
  if (*sent == 0 || *sent < b->len / 2) return;
  buf_consume(b, *sent);
  *sent = 0;
}

/* ---- to the host ---- */

static void flush_host(relay *r) {
  while (r->exit_code < 0 && pending(&r->outbox, r->outbox_sent)) {
    ssize_t k = write(1, r->outbox.data + r->outbox_sent, pending(&r->outbox, r->outbox_sent));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) return;
    if (k <= 0) r->exit_code = 0; /* the host is gone: nothing left to relay for */
    else written(&r->outbox, &r->outbox_sent, (size_t)k);
  }
}

static void tell_host(relay *r, char kind, long long id, const void *data, size_t n) {
  compact(&r->outbox, &r->outbox_sent);
  if (eg_encode(&r->outbox, kind, id, data, n) != 0) {
    fprintf(stderr, "luagent-supervisor egress: out of memory; stopping\n");
    r->exit_code = 1;
  }
}

/* ---- connections ---- */

static void conn_close(relay *r, conn *c, const char *reason) {
  close(c->fd);
  c->fd = -1;
  tell_host(r, 'C', c->id, reason, strlen(reason));
}

static const char *reason_of(int err) {
  if (err == ECONNRESET || err == EPIPE) return "reset by the client";
  return strerror(err);
}

static void conn_finish_sending(relay *r, conn *c) {
  if (c->host_close) {
    conn_close(r, c, "");
  } else if (c->host_shut && !c->shut_done) {
    shutdown(c->fd, SHUT_WR);
    c->shut_done = 1;
    if (c->client_eof) conn_close(r, c, "both sides finished");
  }
}

/* Writes what the socket takes of the inbox, K's it, and ends the sending side
 * when the inbox is empty and the host asked (H or C). */
static void conn_write(relay *r, conn *c) {
  size_t done = 0;
  while (pending(&c->inbox, c->inbox_sent)) {
    ssize_t k = send(c->fd, c->inbox.data + c->inbox_sent, pending(&c->inbox, c->inbox_sent), MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) break;
    if (k < 0) {
      conn_close(r, c, reason_of(errno));
      return;
    }
    written(&c->inbox, &c->inbox_sent, (size_t)k);
    done += (size_t)k;
  }
  if (done && !c->host_close) tell_host(r, 'K', c->id, NULL, done);
  if (pending(&c->inbox, c->inbox_sent)) return;
  if (c->inbox.cap > INBOX_KEEP) buf_free(&c->inbox);
  conn_finish_sending(r, c);
}

/* Reads what the window allows from the client and relays it as D. */
static void conn_read(relay *r, conn *c) {
  size_t room = EGRESS_WINDOW - c->unacked;
  ssize_t k;
  do k = read(c->fd, r->chunk, room < READ_CHUNK ? room : READ_CHUNK);
  while (k < 0 && errno == EINTR);
  if (k < 0 && errno == EAGAIN) return;
  if (k < 0) {
    conn_close(r, c, reason_of(errno));
    return;
  }
  if (k == 0) {
    c->client_eof = 1;
    tell_host(r, 'H', c->id, NULL, 0);
    if (c->shut_done) conn_close(r, c, "both sides finished");
    return;
  }
  c->unacked += (size_t)k;
  tell_host(r, 'D', c->id, r->chunk, (size_t)k);
}

static int wants_read(const relay *r, const conn *c) {
  return !c->client_eof && !c->host_close && c->unacked < EGRESS_WINDOW &&
         pending(&r->outbox, r->outbox_sent) < OUTBOX_HIGH;
}

/* Closes abruptly (RST), so that a client never takes a cut stream for a whole one. */
static void conn_reset(conn *c) {
  struct linger now = {1, 0};
  setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
  close(c->fd);
  c->fd = -1;
}

static void conn_free(conn *c) {
  buf_free(&c->inbox);
  free(c);
}

/* Frees the connections closed this round, keeping the id order. */
static void sweep(relay *r) {
  size_t kept = 0;
  for (size_t i = 0; i < r->nconns; i++) {
    if (r->conns[i]->fd >= 0) r->conns[kept++] = r->conns[i];
    else conn_free(r->conns[i]);
  }
  r->nconns = kept;
}

/* The open connection with this id (binary search: ids only grow), or NULL. */
static conn *conn_find(relay *r, long long id) {
  size_t lo = 0, hi = r->nconns;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->conns[mid]->id == id) return r->conns[mid]->fd >= 0 ? r->conns[mid] : NULL;
    if (r->conns[mid]->id < id) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

static void accept_clients(relay *r, int listener) {
  while (r->nconns < EGRESS_MAX_CONNS && r->last_id < EG_MAX_CONN) {
    int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return; /* EAGAIN, or a client gone before it was taken */
    conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* bytes go on as they come */
    c->fd = fd;
    c->id = ++r->last_id;
    r->conns[r->nconns++] = c;
    tell_host(r, 'A', c->id, NULL, 0);
  }
}

/* ---- from the host ---- */

static int refuse(relay *r, const char *fmt, char kind, long long id) {
  snprintf(r->refusal, sizeof r->refusal, fmt, kind, id);
  return -1;
}

static int on_data(relay *r, conn *c, const char *data, size_t n) {
  if (c->host_shut || c->host_close) return refuse(r, "%c %lld after the host's H or C", 'D', c->id);
  if (pending(&c->inbox, c->inbox_sent) + n > EGRESS_WINDOW)
    return refuse(r, "%c %lld past the window (more than 1 MiB not K'd)", 'D', c->id);
  compact(&c->inbox, &c->inbox_sent);
  if (buf_append(&c->inbox, data, n) != 0) return refuse(r, "%c %lld: out of memory", 'D', c->id);
  conn_write(r, c);
  return 0;
}

static int on_host_msg(void *ctx, char kind, long long id, const char *data, size_t n) {
  relay *r = ctx;
  if (!strchr("DHCK", kind)) return refuse(r, "%c %lld: not a kind the host sends", kind, id);
  if (id < 1 || id > r->last_id) return refuse(r, "%c %lld: no such connection was ever opened", kind, id);
  if ((kind == 'H' || kind == 'C') && n) return refuse(r, "%c %lld with a payload", kind, id);
  conn *c = conn_find(r, id);
  if (!c) return 0; /* closed here already: the two ends raced */
  if (kind == 'D') return on_data(r, c, data, n);
  if (kind == 'K') {
    if (n > c->unacked) return refuse(r, "%c %lld for more bytes than were sent", kind, id);
    c->unacked -= n;
    return 0;
  }
  if (c->host_close || (kind == 'H' && c->host_shut)) return refuse(r, "%c %lld twice", kind, id);
  if (kind == 'H') c->host_shut = 1;
  else c->host_close = 1, c->close_deadline = now_ms() + CLOSE_GRACE_MS;
  if (!pending(&c->inbox, c->inbox_sent)) conn_finish_sending(r, c);
  return 0;
}

static void read_host(relay *r) {
  ssize_t k = read_some(0, r->chunk, sizeof r->chunk);
  if (k < 0 && errno == EAGAIN) return;
  if (k <= 0) {
    r->exit_code = 0;
    return;
  }
  if (eg_feed(&r->parser, r->chunk, (size_t)k, on_host_msg, r) != 0) {
    fprintf(stderr, "luagent-supervisor egress: not an egress message from the host (%s); stopping\n",
            r->refusal[0] ? r->refusal : r->parser.error);
    r->exit_code = 2;
  }
}

/* ---- the loop ---- */

enum watch { W_STDIN, W_STDOUT, W_LISTENER, W_CONN };

typedef struct poll_set {
  struct pollfd fds[EGRESS_MAX_CONNS + 4];
  enum watch what[EGRESS_MAX_CONNS + 4];
  conn *conns[EGRESS_MAX_CONNS + 4];
  size_t n;
} poll_set;

static void watch(poll_set *p, int fd, short events, enum watch what, conn *c) {
  p->fds[p->n] = (struct pollfd){fd, events, 0};
  p->what[p->n] = what;
  p->conns[p->n++] = c;
}

/* Fills the set; returns the poll timeout in ms (-1: none). */
static int build_poll_set(relay *r, poll_set *p, long long now) {
  p->n = 0;
  watch(p, 0, POLLIN, W_STDIN, NULL);
  if (pending(&r->outbox, r->outbox_sent)) watch(p, 1, POLLOUT, W_STDOUT, NULL);
  for (int i = 0; i < r->nlisteners && r->nconns < EGRESS_MAX_CONNS; i++)
    watch(p, r->listeners[i], POLLIN, W_LISTENER, NULL);
  long long next = -1;
  for (size_t i = 0; i < r->nconns; i++) {
    conn *c = r->conns[i];
    short events = (wants_read(r, c) ? POLLIN : 0) | (pending(&c->inbox, c->inbox_sent) ? POLLOUT : 0);
    if (events) watch(p, c->fd, events, W_CONN, c); /* none: not watched (no busy loop on a hang-up) */
    if (c->host_close && (next < 0 || c->close_deadline < next)) next = c->close_deadline;
  }
  if (next < 0) return -1;
  return next <= now ? 0 : (int)(next - now);
}

static void on_conn_ready(relay *r, conn *c, short revents) {
  if (c->fd >= 0 && (revents & (POLLIN | POLLHUP | POLLERR)) && wants_read(r, c)) conn_read(r, c);
  if (c->fd >= 0 && (revents & (POLLOUT | POLLHUP | POLLERR)) && pending(&c->inbox, c->inbox_sent))
    conn_write(r, c);
}

/* A host's C whose bytes the client did not take within the grace: closed anyway. */
static void check_deadlines(relay *r, long long now) {
  for (size_t i = 0; i < r->nconns; i++) {
    conn *c = r->conns[i];
    if (c->fd < 0 || !c->host_close || now < c->close_deadline) continue;
    conn_reset(c);
    tell_host(r, 'C', c->id, NULL, 0);
  }
}

static void relay_round(relay *r, poll_set *p) {
  int timeout = build_poll_set(r, p, now_ms());
  if (poll(p->fds, p->n, timeout) < 0 && errno != EINTR) {
    r->exit_code = 1;
    return;
  }
  for (size_t i = 0; i < p->n && r->exit_code < 0; i++) {
    short ev = p->fds[i].revents;
    if (!ev) continue;
    if (p->what[i] == W_STDIN) read_host(r);
    else if (p->what[i] == W_STDOUT) flush_host(r);
    else if (p->what[i] == W_LISTENER) accept_clients(r, p->fds[i].fd);
    else on_conn_ready(r, p->conns[i], ev);
  }
  check_deadlines(r, now_ms());
  flush_host(r);
  sweep(r);
}

/* ---- setting up ---- */

static int listen_on(int family, int port) {
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  struct sockaddr_in v4 = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct sockaddr_in6 v6 = {.sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
  int one = 1;
  /* SO_REUSEADDR only lets a relay started again (after a restart) take the
   * port while connections it closed wait in TIME_WAIT: on Linux no other
   * socket can bind beside a listening one, with or without the option. */
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int bound = family == AF_INET ? bind(fd, (struct sockaddr *)&v4, sizeof v4)
                                : setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) ||
                                      bind(fd, (struct sockaddr *)&v6, sizeof v6);
  if (bound != 0 || listen(fd, 512) != 0) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

static int port_of(const char *text) {
  char *end;
  long port = text ? strtol(text, &end, 10) : 0;
  return text && *text >= '1' && *text <= '9' && *end == '\0' && port <= 65535 ? (int)port : 0;
}

/* Binds 127.0.0.1:port (a must) and [::1]:port (best effort: a container may have no ::1). */
static int open_listeners(relay *r, int port) {
  r->listeners[0] = listen_on(AF_INET, port);
  if (r->listeners[0] < 0) {
    fprintf(stderr, "luagent-supervisor egress: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
    return -1;
  }
  r->nlisteners = 1;
  int v6 = listen_on(AF_INET6, port);
  if (v6 >= 0) r->listeners[r->nlisteners++] = v6;
  else if (errno == EADDRINUSE) fprintf(stderr, "luagent-supervisor egress: [::1]:%d is taken; IPv4 only\n", port);
  return 0;
}

static void shut_down(relay *r) {
  for (size_t i = 0; i < r->nconns; i++) {
    if (r->conns[i]->fd >= 0) conn_reset(r->conns[i]);
    conn_free(r->conns[i]);
  }
  for (int i = 0; i < r->nlisteners; i++) close(r->listeners[i]);
  buf_free(&r->outbox);
  eg_parser_free(&r->parser);
}

int egress_main(const char *port_text) {
  int port = port_of(port_text);
  if (!port) {
    fprintf(stderr, "luagent-supervisor egress: the port must be a decimal 1..65535, not '%s'\n",
            port_text ? port_text : "");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_DUMPABLE, 0);
  relay *r = calloc(1, sizeof *r);
  poll_set *p = calloc(1, sizeof *p);
  if (!r || !p || open_listeners(r, port) != 0) return free(r), free(p), 1;
  eg_parser_init(&r->parser);
  r->exit_code = -1;
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
  char ready[64];
  int n = snprintf(ready, sizeof ready, "egress %s 127.0.0.1:%d", EGRESS_PROTOCOL_VERSION, port);
  tell_host(r, 'R', 0, ready, (size_t)n);
  while (r->exit_code < 0) relay_round(r, p);
  int code = r->exit_code;
  shut_down(r);
  free(r), free(p);
  return code;
}

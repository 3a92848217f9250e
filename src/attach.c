/* attach: the hijacked exec connection (see attach.h). */
#include "attach.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "docker.h"

#define MAX_HEAD 16384

enum attach_state { HANDSHAKE, OPEN, CLOSED };

struct docker_attach {
  loop *lp;
  loop_watch watch;
  enum attach_state state;
  buf out;          /* bytes not yet written */
  size_t out_sent;  /* of them, already written */
  buf head;         /* the HTTP response head while upgrading */
  docker_demux demux;
  attach_callbacks cb;
  void *ctx;
};

static void finish(docker_attach *a, const char *why) {
  if (a->state == CLOSED) return;
  a->state = CLOSED;
  loop_watch_stop(a->lp, &a->watch);
  close(a->watch.fd);
  a->watch.fd = -1;
  a->cb.on_close(a->ctx, why);
}

static void update_interest(docker_attach *a) {
  a->watch.events = (short)(POLLIN | (a->out_sent < a->out.len ? POLLOUT : 0));
}

static void flush_out(docker_attach *a) {
  while (a->out_sent < a->out.len) {
    ssize_t n = send(a->watch.fd, a->out.data + a->out_sent, a->out.len - a->out_sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0) {
      finish(a, strerror(errno));
      return;
    }
    a->out_sent += (size_t)n;
  }
  if (a->out_sent == a->out.len) {
    buf_clear(&a->out);
    a->out_sent = 0;
  }
  update_interest(a);
}

static int deliver(docker_attach *a, const char *data, size_t n) {
  if (docker_demux_feed(&a->demux, data, n, a->cb.on_data, a->ctx) != 0) {
    finish(a, "malformed stream from the Docker engine");
    return -1;
  }
  return 0;
}

/* Reads the response head; on "101"/"200" the rest is the raw stream. */
static void handshake(docker_attach *a, const char *data, size_t n) {
  buf_append(&a->head, data, n);
  char *end = strstr(a->head.data, "\r\n\r\n");
  if (!end) {
    if (a->head.len > MAX_HEAD) finish(a, "the Docker engine sent an oversized response head");
    return;
  }
  int status = 0;
  sscanf(a->head.data, "HTTP/1.%*d %d", &status);
  size_t head_len = (size_t)(end + 4 - a->head.data);
  if (status != 101 && status != 200) {
    char why[512];
    snprintf(why, sizeof why, "the Docker engine refused the attach (HTTP %d): %.300s", status,
             a->head.data + head_len);
    finish(a, why);
    return;
  }
  a->state = OPEN;
  a->cb.on_open(a->ctx);
  if (a->state == OPEN && a->head.len > head_len) deliver(a, a->head.data + head_len, a->head.len - head_len);
  buf_free(&a->head);
}

static void on_ready(loop_watch *w, short revents) {
  docker_attach *a = (docker_attach *)((char *)w - offsetof(docker_attach, watch));
  if (revents & POLLOUT) flush_out(a);
  if (a->state == CLOSED || !(revents & (POLLIN | POLLHUP | POLLERR))) return;
  char chunk[65536];
  for (;;) {
    ssize_t n = recv(a->watch.fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      finish(a, n == 0 ? (a->state == OPEN ? NULL : "the Docker engine closed the connection") : strerror(errno));
      return;
    }
    if (a->state == HANDSHAKE)
      handshake(a, chunk, (size_t)n);
    else if (deliver(a, chunk, (size_t)n) != 0)
      return;
    if (a->state == CLOSED) return;
  }
}

static int connect_unix(const char *path, char *err, size_t errlen) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr.sun_path) {
    snprintf(err, errlen, "socket path too long: %s", path);
    return -1;
  }
  strcpy(addr.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    snprintf(err, errlen, "cannot connect to %s: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

docker_attach *docker_attach_start(loop *lp, const char *socket_path, const char *path, const char *body,
                                   const attach_callbacks *cb, void *ctx, char *err, size_t errlen) {
  int fd = connect_unix(socket_path, err, errlen);
  if (fd < 0) return NULL;
  docker_attach *a = calloc(1, sizeof *a);
  if (!a) {
    close(fd);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  a->lp = lp;
  a->cb = *cb;
  a->ctx = ctx;
  a->state = HANDSHAKE;
  docker_demux_init(&a->demux);
  buf_printf(&a->out,
             "POST %s HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\n"
             "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: %zu\r\n\r\n%s",
             path, strlen(body), body);
  a->watch.fd = fd;
  a->watch.ready = on_ready;
  update_interest(a);
  if (loop_watch_start(lp, &a->watch) != 0) {
    snprintf(err, errlen, "too many open connections");
    docker_attach_free(a);
    return NULL;
  }
  return a;
}

int docker_attach_write(docker_attach *a, const void *data, size_t n) {
  if (a->state == CLOSED) return -1;
  if (buf_append(&a->out, data, n) != 0) return -1;
  flush_out(a);
  return a->state == CLOSED ? -1 : 0;
}

void docker_attach_free(docker_attach *a) {
  if (!a) return;
  if (a->state != CLOSED) {
    loop_watch_stop(a->lp, &a->watch);
    close(a->watch.fd);
  }
  buf_free(&a->out);
  buf_free(&a->head);
  free(a);
}

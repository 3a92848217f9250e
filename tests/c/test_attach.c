/* attach: the URL split, the upgrade request and the response head (pure),
 * then the whole connection against a fake engine in a child process, over
 * a unix socket and over TCP: the upgrade, frames both ways, a write larger
 * than the socket takes at once (queued, then written as it drains), the
 * engine ending the stream, a refused attach, nothing listening, and TLS
 * with a CA file that is not there. Then the websocket mode against a fake
 * Kubernetes API server: the upgrade with its header, stdin in messages and
 * stdout back, a pause, the Status as the end's reason; a refusal with a
 * JSON Status, a wrong Sec-WebSocket-Accept, nothing listening. */
#include "../../src/core/attach.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/core/docker_wire.h"
#include "../../src/core/websocket.h"
#include "test.h"

/* ---- pure parts ---- */

static void urls_split_into_authority_and_path(void) {
  const char *auth, *path;
  size_t len;
  CHECK(attach_split_url("http://localhost/v1.41/exec/x/start", &auth, &len, &path) == 0);
  CHECK(len == 9 && strncmp(auth, "localhost", len) == 0);
  CHECK_STR(path, "/v1.41/exec/x/start");
  CHECK(attach_split_url("https://127.0.0.1:2376/v1.43/exec/y/start?a=1", &auth, &len, &path) == 0);
  CHECK(len == 14 && strncmp(auth, "127.0.0.1:2376", len) == 0);
  CHECK_STR(path, "/v1.43/exec/y/start?a=1");
  CHECK(attach_split_url("http://h:1", &auth, &len, &path) == 0);
  CHECK_STR(path, "/");
  CHECK(attach_split_url("tcp://h:2375/x", &auth, &len, &path) == -1);
  CHECK(attach_split_url("http:///x", &auth, &len, &path) == -1);
  CHECK(attach_split_url("http://h?x=1", &auth, &len, &path) == -1);
}

static void the_upgrade_request(void) {
  buf b = BUF_INIT;
  CHECK(attach_request(&b, "h:2376", 6, "/v1.41/exec/x/start", "{\"Tty\":false}") == 0);
  CHECK_STR(b.data, "POST /v1.41/exec/x/start HTTP/1.1\r\nHost: h:2376\r\nContent-Type: application/json\r\n"
                    "Connection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 13\r\n\r\n{\"Tty\":false}");
  buf_clear(&b);
  CHECK(attach_request(&b, "h", 1, "/x HTTP/1.1\r\nEvil: 1", "{}") == -1); /* no header injection */
  CHECK(attach_request(&b, "h\r\nEvil: 1", 10, "/x", "{}") == -1);
  buf_free(&b);
}

static void response_heads(void) {
  int status;
  size_t len;
  const char *up = "HTTP/1.1 101 UPGRADED\r\nUpgrade: tcp\r\n\r\n\x01\0\0\0";
  CHECK(attach_response_head(up, 20, &status, &len) == 0); /* not all there yet */
  CHECK(attach_response_head(up, strlen(up), &status, &len) == 1);
  CHECK(status == 101 && len == strlen(up) - 1); /* the frame after it is not part of it */
  CHECK(attach_response_head("HTTP/1.0 404 Not Found\r\n\r\n", 26, &status, &len) == 1 && status == 404);
  CHECK(attach_response_head("SSH-2.0-x\r\n\r\n", 13, &status, &len) == 1 && status == 0);
  CHECK(attach_response_head("HTTP/1.1 20\r\n\r\n", 15, &status, &len) == 1 && status == 0);
}

/* ---- a fake engine ---- */

enum mode { ECHO, REFUSE };

static void write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) _exit(3);
    p += w, n -= (size_t)w;
  }
}

static void frame(int fd, int stream, const char *data, size_t n) {
  unsigned char h[8] = {(unsigned char)stream, 0, 0, 0, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                        (unsigned char)(n >> 8), (unsigned char)n};
  write_all(fd, h, 8);
  write_all(fd, data, n);
}

/* The child: one connection; reads the request; refuses it, or upgrades it
 * and echoes stdin as stdout frames until "bye\n" ends a read (then it
 * closes: the engine ends the stream). Pauses first, so writes queue. */
static void engine(int listener, enum mode mode) {
  int c = accept(listener, NULL, NULL);
  if (c < 0) _exit(2);
  char req[4096];
  size_t got = 0;
  while (!memmem(req, got, "\r\n\r\n", 4)) {
    ssize_t n = read(c, req + got, sizeof req - got);
    if (n <= 0) _exit(2);
    got += (size_t)n;
  }
  int good = memcmp(req, "POST /v1.41/exec/abc/start HTTP/1.1\r\n", 37) == 0 && memmem(req, got, "Upgrade: tcp", 12);
  if (mode == REFUSE || !good) {
    const char *no = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n\r\n"
                     "{\"message\":\"No such exec instance: abc\"}";
    write_all(c, no, strlen(no));
    _exit(0);
  }
  const char *up = "HTTP/1.1 101 UPGRADED\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n"
                   "\x02\0\0\0\0\0\0\x06hello\n"; /* the head and a first frame in one write */
  write_all(c, up, strlen(up) + 13); /* strlen stops inside the frame header */
  usleep(200 * 1000);
  char chunk[65536], last[5] = "....";
  for (;;) {
    ssize_t n = read(c, chunk, sizeof chunk);
    if (n <= 0) _exit(0);
    frame(c, 1, chunk, (size_t)n);
    for (ssize_t i = 0; i < n; i++) memmove(last, last + 1, 3), last[3] = chunk[i];
    if (memcmp(last, "bye\n", 4) == 0) _exit(0);
  }
}

static pid_t serve(int listener, enum mode mode) {
  pid_t pid = fork();
  if (pid == 0) engine(listener, mode);
  close(listener);
  return pid;
}

static int listen_unix(const char *path) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path) return -1;
  memcpy(addr.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  unlink(path);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 4) != 0) return -1;
  return fd;
}

/* A loopback TCP socket on a free port; listening unless `quiet`. */
static int listen_tcp(int *port, int quiet) {
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || (!quiet && listen(fd, 4) != 0)) return -1;
  getsockname(fd, (struct sockaddr *)&addr, &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

/* ---- a fake Kubernetes API server ---- */

enum ws_mode { WS_ECHO, WS_FORBID, WS_BAD_ACCEPT };

static void server_message(int fd, int channel, const char *data, size_t n) {
  unsigned char h[10] = {0x82};
  size_t len = 2, total = n + 1;
  if (total < 126) {
    h[1] = (unsigned char)total;
  } else if (total <= 0xffff) {
    h[1] = 126, h[2] = (unsigned char)(total >> 8), h[3] = (unsigned char)total, len = 4;
  } else {
    h[1] = 127, len = 10;
    for (int i = 0; i < 8; i++) h[2 + i] = (unsigned char)((unsigned long long)total >> (56 - 8 * i));
  }
  unsigned char ch = (unsigned char)channel;
  write_all(fd, h, len);
  write_all(fd, &ch, 1);
  write_all(fd, data, n);
}

/* Takes whole client frames from the front of in: each stdin message's
 * data is echoed on stdout; 1 once "bye\n" ended one. */
static int echo_frames(int fd, buf *in) {
  for (;;) {
    const unsigned char *f = (const unsigned char *)in->data;
    if (in->len < 2) return 0;
    if (!(f[1] & 0x80)) _exit(4); /* a client frame must be masked */
    unsigned long long n = f[1] & 0x7f;
    size_t at = n == 126 ? 4 : n == 127 ? 10 : 2;
    if (in->len < at + 4) return 0;
    if (n == 126) n = (unsigned long long)f[2] << 8 | f[3];
    if (n == 127) {
      n = 0;
      for (int i = 0; i < 8; i++) n = n << 8 | f[2 + i];
    }
    if (in->len < at + 4 + n) return 0;
    char *payload = in->data + at + 4;
    for (unsigned long long i = 0; i < n; i++) payload[i] ^= (char)f[at + i % 4];
    if ((f[0] & 0x0f) != 2 || n == 0 || payload[0] != 0) _exit(5); /* binary, on stdin */
    server_message(fd, 1, payload + 1, n - 1);
    int bye = n >= 5 && memcmp(payload + n - 4, "bye\n", 4) == 0;
    buf_consume(in, at + 4 + n);
    if (bye) return 1;
  }
}

/* The child: one connection; reads the request (it must carry the token);
 * refuses it, answers a wrong accept, or upgrades (v4) and echoes stdin on
 * stdout until "bye\n", then sends a Failure Status and closes. */
static void api_server(int listener, enum ws_mode mode) {
  int c = accept(listener, NULL, NULL);
  if (c < 0) _exit(2);
  char req[4096];
  size_t got = 0;
  while (!memmem(req, got, "\r\n\r\n", 4)) {
    ssize_t n = read(c, req + got, sizeof req - 1 - got);
    if (n <= 0) _exit(2);
    got += (size_t)n;
  }
  req[got] = '\0';
  char *key = strstr(req, "Sec-WebSocket-Key: ");
  int good = strncmp(req, "GET /api/v1/namespaces/ns/pods/p/exec?container=c&command=x HTTP/1.1\r\n", 70) == 0 &&
             strstr(req, "\r\nAuthorization: Bearer t0ken\r\n") && strstr(req, "v5.channel.k8s.io, v4.channel.k8s.io");
  if (mode == WS_FORBID || !good || !key) {
    const char *body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods \\\"p\\\" is forbidden: no\"}";
    dprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
            strlen(body), body);
    _exit(0);
  }
  key += 19;
  key[WS_KEY_LEN] = '\0';
  char accept_value[WS_ACCEPT_LEN + 1];
  ws_accept(mode == WS_BAD_ACCEPT ? "other" : key, accept_value);
  dprintf(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n", accept_value);
  usleep(50 * 1000); /* the blank line comes apart: the host must look for the head's end again */
  write_all(c, "\r\n", 2);
  server_message(c, 1, "", 0); /* as the kubelet does first */
  server_message(c, 2, "hello\n", 6);
  usleep(200 * 1000);
  buf in = BUF_INIT;
  char chunk[65536];
  for (int bye = 0; !bye;) {
    ssize_t n = read(c, chunk, sizeof chunk);
    if (n <= 0) _exit(0);
    buf_append(&in, chunk, (size_t)n);
    bye = echo_frames(c, &in);
  }
  const char *status = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero exit "
                       "code: exit code 3\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"3\"}]}}";
  server_message(c, 3, status, strlen(status));
  write_all(c, "\x88\x02\x03\xe8", 4);
  while (read(c, chunk, sizeof chunk) > 0) {
  }
  _exit(0);
}

static pid_t serve_api(int listener, enum ws_mode mode) {
  pid_t pid = fork();
  if (pid == 0) api_server(listener, mode);
  close(listener);
  return pid;
}

/* ---- the host side ---- */

typedef struct seen {
  int opened, closed, status;
  buf out, err;
  char kind[32], why[1024];
} seen;

static void on_open(void *ctx) { ((seen *)ctx)->opened++; }

static int on_data(void *ctx, int stream, const char *data, size_t n) {
  seen *s = ctx;
  return buf_append(stream == DOCKER_STDOUT ? &s->out : &s->err, data, n);
}

static void on_close(void *ctx, const char *kind, const char *why) {
  seen *s = ctx;
  s->closed++;
  snprintf(s->kind, sizeof s->kind, "%s", kind ? kind : "(clean)");
  snprintf(s->why, sizeof s->why, "%s", why ? why : "(none)");
}

static const attach_callbacks CALLBACKS = {on_open, on_data, on_close};

/* Runs the loop until cond holds, 10 s at most. */
#define RUN_UNTIL(lp, cond)                                                      \
  do {                                                                           \
    double deadline_ = loop_now() + 10;                                          \
    while (!(cond) && loop_now() < deadline_) loop_run_once((lp), 0.05);         \
  } while (0)

/* The upgrade, frames both ways with 16 MiB queued at once (more than any
 * socket buffer here), the engine's end. */
static void echo_session(const attach_target *t, const char *engine_name) {
  loop *lp = loop_new();
  seen s = {0};
  char err[256];
  docker_attach *a = docker_attach_start(lp, t, "{\"Detach\":false}", &CALLBACKS, &s, err, sizeof err);
  CHECK(a != NULL);
  if (!a) return;
  CHECK_STR(docker_attach_engine(a), engine_name);
  RUN_UNTIL(lp, s.opened || s.closed);
  CHECK(s.opened == 1 && !s.closed);
  RUN_UNTIL(lp, s.err.len >= 6 || s.closed);
  CHECK_STR(s.err.data, "hello\n");
  size_t big = 16u << 20;
  char *data = malloc(big);
  for (size_t i = 0; i < big; i++) data[i] = (char)('a' + i % 26);
  CHECK(docker_attach_write(a, data, big) == 0);
  CHECK(docker_attach_pending(a) > 0); /* the socket took part of it; the rest waits for the loop */
  CHECK(docker_attach_write(a, "bye\n", 4) == 0);
  RUN_UNTIL(lp, s.closed);
  CHECK(s.out.len == big + 4);
  CHECK(s.out.len >= big && memcmp(s.out.data, data, big) == 0);
  CHECK(docker_attach_pending(a) == 0);
  CHECK(s.closed == 1);
  CHECK_STR(s.kind, "(clean)");
  CHECK(strstr(s.why, engine_name) && strstr(s.why, "ended the stream"));
  CHECK(docker_attach_write(a, "x", 1) == -1); /* over */
  docker_attach_free(a);
  free(data);
  buf_free(&s.out);
  buf_free(&s.err);
  loop_free(lp);
}

static char dir[] = "/tmp/luagent-attach-test-XXXXXX";

static void over_a_unix_socket(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/engine.sock", dir);
  pid_t pid = serve(listen_unix(path), ECHO);
  char name[160];
  snprintf(name, sizeof name, "unix://%s", path);
  attach_target t = {.url = "http://localhost/v1.41/exec/abc/start", .unix_socket = path};
  echo_session(&t, name);
  waitpid(pid, NULL, 0);
}

static void over_tcp(void) {
  int port;
  pid_t pid = serve(listen_tcp(&port, 0), ECHO);
  char url[128], name[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1.41/exec/abc/start", port);
  snprintf(name, sizeof name, "tcp://127.0.0.1:%d", port);
  attach_target t = {.url = url};
  echo_session(&t, name);
  waitpid(pid, NULL, 0);
}

/* Starts an attach to url that is expected to fail; returns what on_close saw. */
static seen failing(const attach_target *t) {
  loop *lp = loop_new();
  seen s = {0};
  char err[256];
  docker_attach *a = docker_attach_start(lp, t, "{}", &CALLBACKS, &s, err, sizeof err);
  CHECK(a != NULL);
  RUN_UNTIL(lp, s.closed);
  s.status = docker_attach_status(a);
  docker_attach_free(a);
  buf_free(&s.out);
  buf_free(&s.err);
  loop_free(lp);
  return s;
}

static void a_refused_attach(void) {
  int port;
  pid_t pid = serve(listen_tcp(&port, 0), REFUSE);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1.41/exec/abc/start", port);
  seen s = failing(&(attach_target){.url = url});
  CHECK(s.closed == 1 && !s.opened);
  CHECK_STR(s.kind, "docker");
  CHECK(strstr(s.why, "refused the attach (HTTP 404)") && strstr(s.why, "No such exec instance"));
  waitpid(pid, NULL, 0);
}

static void nothing_listening(void) {
  int port, fd = listen_tcp(&port, 1);
  char url[128], name[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1.41/exec/abc/start", port);
  snprintf(name, sizeof name, "cannot connect to the Docker engine at tcp://127.0.0.1:%d: ", port);
  seen s = failing(&(attach_target){.url = url});
  close(fd);
  CHECK_STR(s.kind, "docker_unreachable");
  CHECK(strstr(s.why, name) != NULL);
  char path[128];
  snprintf(path, sizeof path, "%s/nobody.sock", dir);
  s = failing(&(attach_target){.url = "http://localhost/v1.41/exec/abc/start", .unix_socket = path});
  CHECK_STR(s.kind, "docker_unreachable");
  CHECK(strstr(s.why, path) != NULL);
}

static void tls_without_its_ca_file(void) {
  int port;
  int fd = listen_tcp(&port, 0);
  char url[128];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/v1.41/exec/abc/start", port);
  seen s = failing(&(attach_target){.url = url, .tls.ca_file = "/nonexistent/luagent-ca.pem",
                                    .tls.cert_file = "/nonexistent/cert.pem", .tls.key_file = "/nonexistent/key.pem"});
  close(fd);
  CHECK_STR(s.kind, "tls");
  CHECK(strstr(s.why, "TLS with the Docker engine at tcp://127.0.0.1:") != NULL);
  CHECK(strstr(s.why, "CA file /nonexistent/luagent-ca.pem") != NULL);
}

/* Freed while it connects: no callback, nothing left (ASan watches). */
static void freed_while_connecting(void) {
  int port, fd = listen_tcp(&port, 0);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1.41/exec/abc/start", port);
  loop *lp = loop_new();
  seen s = {0};
  char err[256];
  docker_attach *a = docker_attach_start(lp, &(attach_target){.url = url}, "{}", &CALLBACKS, &s, err, sizeof err);
  loop_run_once(lp, 0.01);
  docker_attach_free(a);
  loop_run_once(lp, 0.01);
  CHECK(s.closed == 0);
  CHECK(loop_pending(lp) == 0);
  CHECK(docker_attach_start(lp, &(attach_target){.url = "tcp://x:1/y"}, "{}", &CALLBACKS, &s, err, sizeof err) ==
        NULL);
  CHECK(strstr(err, "http:// or https://") != NULL);
  close(fd);
  loop_free(lp);
}

/* ---- websocket mode ---- */

static const char *const BEARER[] = {"Authorization: Bearer t0ken", NULL};

/* The exec url of the fake API server on port. */
static void exec_url(char *url, size_t n, int port) {
  snprintf(url, n, "http://127.0.0.1:%d/api/v1/namespaces/ns/pods/p/exec?container=c&command=x", port);
}

/* Runs the loop for `seconds` whatever happens. */
static void run_for(loop *lp, double seconds) {
  double until = loop_now() + seconds;
  while (loop_now() < until) loop_run_once(lp, 0.05);
}

/* stdin written before the upgrade (held until it), stderr and stdout back,
 * a pause that holds the server's output in the socket, 3 MiB in three
 * messages, and the end saying what the Status said. */
static void websocket_session(void) {
  int port;
  pid_t pid = serve_api(listen_tcp(&port, 0), WS_ECHO);
  char url[160], name[64];
  exec_url(url, sizeof url, port);
  snprintf(name, sizeof name, "http://127.0.0.1:%d", port);
  loop *lp = loop_new();
  seen s = {0};
  char err[256];
  attach_target t = {.url = url, .websocket = 1, .headers = BEARER};
  docker_attach *a = docker_attach_start(lp, &t, NULL, &CALLBACKS, &s, err, sizeof err);
  CHECK(a != NULL);
  CHECK_STR(docker_attach_engine(a), name);
  CHECK(docker_attach_write(a, "early ", 6) == 0 && docker_attach_pending(a) > 6);
  RUN_UNTIL(lp, s.out.len >= 6 || s.closed);
  CHECK(s.opened == 1 && !s.closed);
  CHECK_STR(s.err.data, "hello\n");
  CHECK_STR(s.out.data, "early ");
  docker_attach_pause(a, 1);
  CHECK(docker_attach_write(a, "paused ", 7) == 0);
  run_for(lp, 0.3);
  CHECK(s.out.len == 6);
  docker_attach_pause(a, 0);
  RUN_UNTIL(lp, s.out.len >= 13 || s.closed);
  size_t big = 3u << 20;
  char *data = malloc(big);
  for (size_t i = 0; i < big; i++) data[i] = (char)('a' + i % 23);
  CHECK(docker_attach_write(a, data, big) == 0 && docker_attach_write(a, "bye\n", 4) == 0);
  RUN_UNTIL(lp, s.closed);
  CHECK(s.out.len == 13 + big + 4 && memcmp(s.out.data, "early paused ", 13) == 0);
  CHECK(s.out.len > big && memcmp(s.out.data + 13, data, big) == 0);
  CHECK_STR(s.kind, "(clean)");
  CHECK(strstr(s.why, "the Kubernetes API server at http://127.0.0.1:") != NULL);
  CHECK(strstr(s.why, "ended the exec: command terminated with non-zero exit code: exit code 3") != NULL);
  docker_attach_free(a);
  free(data);
  buf_free(&s.out);
  buf_free(&s.err);
  loop_free(lp);
  waitpid(pid, NULL, 0);
}

static void websocket_refusals(void) {
  int port;
  char url[160], name[128];
  pid_t pid = serve_api(listen_tcp(&port, 0), WS_FORBID);
  exec_url(url, sizeof url, port);
  seen s = failing(&(attach_target){.url = url, .websocket = 1, .headers = BEARER});
  CHECK_STR(s.kind, "kubernetes");
  CHECK(s.status == 403);
  CHECK(strstr(s.why, "refused the exec (HTTP 403): pods \"p\" is forbidden: no") != NULL);
  waitpid(pid, NULL, 0);
  pid = serve_api(listen_tcp(&port, 0), WS_BAD_ACCEPT);
  exec_url(url, sizeof url, port);
  s = failing(&(attach_target){.url = url, .websocket = 1, .headers = BEARER});
  CHECK_STR(s.kind, "protocol");
  CHECK(strstr(s.why, "Sec-WebSocket-Accept") != NULL && s.status == 0);
  waitpid(pid, NULL, 0);
  int fd = listen_tcp(&port, 1);
  exec_url(url, sizeof url, port);
  s = failing(&(attach_target){.url = url, .websocket = 1});
  close(fd);
  CHECK_STR(s.kind, "cluster_unreachable");
  snprintf(name, sizeof name, "cannot connect to the Kubernetes API server at http://127.0.0.1:%d: ", port);
  CHECK(strstr(s.why, name) != NULL);
  const char *const evil[] = {"X: 1\r\nY: 2", NULL};
  loop *lp = loop_new();
  char err[256];
  CHECK(docker_attach_start(lp, &(attach_target){.url = url, .websocket = 1, .headers = evil}, NULL, &CALLBACKS, &s,
                            err, sizeof err) == NULL);
  CHECK(strstr(err, "cannot make the exec request") != NULL);
  loop_free(lp);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  if (!mkdtemp(dir)) return 1;
  RUN(urls_split_into_authority_and_path);
  RUN(the_upgrade_request);
  RUN(response_heads);
  RUN(over_a_unix_socket);
  RUN(over_tcp);
  RUN(a_refused_attach);
  RUN(nothing_listening);
  RUN(tls_without_its_ca_file);
  RUN(freed_while_connecting);
  RUN(websocket_session);
  RUN(websocket_refusals);
  char sock[128];
  snprintf(sock, sizeof sock, "%s/engine.sock", dir);
  unlink(sock);
  rmdir(dir);
  TEST_EXIT();
}

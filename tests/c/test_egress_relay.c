/* egress_relay: the host's side of a sandbox's egress, driven here without a
 * sandbox: this test plays the relay (it writes the frames the supervisor's
 * relay would and reads the ones the host sends back) and an upstream server
 * on this machine's loopback (a child process). What a connection does:
 * a head parsed once, a refusal answered and closed, one request per
 * connection to an upstream that would serve more, flow control within the
 * window, max_bytes, and the relay's end reaching every connection. */
#include "../../src/core/egress_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/core/egress_frames.h"
#include "test.h"

/* ---- playing the relay ---- */

typedef struct frame {
  char kind;
  long long conn;
  buf data;
  size_t n;
} frame;

typedef struct relay_side {
  eg_parser parser;
  frame frames[4096];
  size_t nframes;
  size_t d_bytes; /* D bytes the host sent, all connections */
  int relay_changes, accepts, conn_changes;
} relay_side;

static int on_host_frame(void *ctx, char kind, long long conn, const char *data, size_t n) {
  relay_side *rs = ctx;
  if (rs->nframes == sizeof rs->frames / sizeof rs->frames[0]) return 0;
  frame *f = &rs->frames[rs->nframes++];
  f->kind = kind, f->conn = conn, f->n = n;
  f->data = (buf)BUF_INIT;
  if (kind != 'K') buf_append(&f->data, data ? data : "", n);
  if (kind == 'D') rs->d_bytes += n;
  return 0;
}

static void host_wrote(void *ctx, const char *data, size_t n) {
  relay_side *rs = ctx;
  eg_feed(&rs->parser, data, n, on_host_frame, rs);
}
static void relay_changed(void *ctx) { ((relay_side *)ctx)->relay_changes++; }
static void accepted(void *ctx) { ((relay_side *)ctx)->accepts++; }
static void conn_changed(void *ctx, egress_conn *c, int gone) {
  (void)c, (void)gone;
  ((relay_side *)ctx)->conn_changes++;
}
static const egress_relay_hooks HOOKS = {host_wrote, relay_changed, accepted, conn_changed};

static void say(egress_relay *r, char kind, long long conn, const char *data, size_t n) {
  buf b = BUF_INIT;
  CHECK(eg_encode(&b, kind, conn, data, n) == 0);
  CHECK(egress_relay_input(r, b.data, b.len) == 0);
  buf_free(&b);
}
static void say_text(egress_relay *r, char kind, long long conn, const char *text) {
  say(r, kind, conn, text, strlen(text));
}

/* What the host sent to the client of conn, all its D frames together. */
static void client_bytes(const relay_side *rs, long long conn, buf *out) {
  for (size_t i = 0; i < rs->nframes; i++)
    if (rs->frames[i].kind == 'D' && rs->frames[i].conn == conn) buf_append(out, rs->frames[i].data.data, rs->frames[i].n);
}
static int sent(const relay_side *rs, char kind, long long conn) {
  for (size_t i = 0; i < rs->nframes; i++)
    if (rs->frames[i].kind == kind && rs->frames[i].conn == conn) return 1;
  return 0;
}
static void relay_side_free(relay_side *rs) {
  for (size_t i = 0; i < rs->nframes; i++) buf_free(&rs->frames[i].data);
  eg_parser_free(&rs->parser);
}

/* Runs the loop until done(ctx) or seconds pass. */
static int run_until(loop *lp, int (*done)(void *), void *ctx, double seconds) {
  double end = loop_now() + seconds;
  while (!done(ctx) && loop_now() < end) loop_run_once(lp, 0.05);
  return done(ctx);
}

/* ---- an upstream that serves every request it reads (pipelined ones too) and never closes ---- */

typedef struct upstream {
  pid_t pid;
  int port;
  int log[2]; /* the child writes each request line it served here */
} upstream;

static void serve_forever(int listener, int log_fd, size_t answer_size) {
  int s = accept(listener, NULL, NULL);
  char req[65536];
  size_t have = 0;
  for (;;) {
    ssize_t n = read(s, req + have, sizeof req - have - 1);
    if (n <= 0) _exit(0);
    have += (size_t)n;
    req[have] = '\0';
    char *end;
    while ((end = strstr(req, "\r\n\r\n"))) { /* one request head (these tests send no body) */
      char *lf = strchr(req, '\r');
      if (write(log_fd, req, (size_t)(lf - req)) < 0 || write(log_fd, "\n", 1) < 0) _exit(1);
      char head[128];
      int len = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", answer_size);
      if (write(s, head, (size_t)len) < 0) _exit(0);
      for (size_t left = answer_size; left;) {
        char chunk[8192];
        size_t k = left < sizeof chunk ? left : sizeof chunk;
        memset(chunk, 'x', k);
        if (write(s, chunk, k) < 0) _exit(0);
        left -= k;
      }
      size_t used = (size_t)(end + 4 - req);
      memmove(req, req + used, have - used + 1);
      have -= used;
    }
  }
}

static upstream start_upstream(size_t answer_size) {
  upstream u = {0};
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 4) == 0);
  getsockname(l, (struct sockaddr *)&a, &alen);
  u.port = ntohs(a.sin_port);
  CHECK(pipe(u.log) == 0);
  u.pid = fork();
  if (u.pid == 0) {
    close(u.log[0]);
    serve_forever(l, u.log[1], answer_size);
  }
  close(l);
  close(u.log[1]);
  return u;
}

/* The request lines the upstream served (reads what is there now). */
static void served(upstream *u, buf *out) {
  char chunk[4096];
  for (;;) {
    fd_set set;
    FD_ZERO(&set);
    FD_SET(u->log[0], &set);
    struct timeval none = {0, 0};
    if (select(u->log[0] + 1, &set, NULL, NULL, &none) <= 0) break;
    ssize_t n = read(u->log[0], chunk, sizeof chunk);
    if (n <= 0) break;
    buf_append(out, chunk, (size_t)n);
  }
}

static void stop_upstream(upstream *u) {
  kill(u->pid, SIGKILL);
  waitpid(u->pid, NULL, 0);
  close(u->log[0]);
}

/* ---- the tests ---- */

typedef struct env {
  loop *lp;
  relay_side rs;
  egress_relay *r;
} env;

static void env_open(env *e) {
  memset(e, 0, sizeof *e);
  e->lp = loop_new();
  eg_parser_init(&e->rs.parser);
  char err[256];
  e->r = egress_relay_new(e->lp, 0, &HOOKS, &e->rs, err, sizeof err);
  CHECK(e->r != NULL);
  say_text(e->r, 'R', 0, "egress 1 127.0.0.1:3128");
}

static void env_close(env *e) {
  egress_relay_free(e->r);
  relay_side_free(&e->rs);
  loop_free(e->lp);
}

static egress_conn *new_client(env *e, long long id) {
  say(e->r, 'A', id, NULL, 0);
  egress_conn *c = egress_relay_accept(e->r);
  CHECK(c != NULL && egress_conn_id(c) == id);
  return c;
}

static void a_head_is_parsed_once_and_a_refusal_closes(void) {
  env e;
  env_open(&e);
  CHECK(egress_relay_ready(e.r) && e.rs.relay_changes == 1);
  egress_conn *c = new_client(&e, 1);
  CHECK(egress_relay_accept(e.r) == NULL); /* handed out once */
  http_message m;
  int status = 0;
  const char *why = NULL;
  say_text(e.r, 'D', 1, "GET http://API.example.com/x HTTP/1.1\r\n");
  CHECK(egress_conn_head(c, HTTP_PROXY_REQUEST, &m, &status, &why) == 0); /* not whole yet */
  http_message_free(&m);
  say_text(e.r, 'D', 1, "Host: api.example.com\r\n\r\nrest");
  CHECK(egress_conn_head(c, HTTP_PROXY_REQUEST, &m, &status, &why) == 1);
  CHECK_STR(m.target_host.name, "api.example.com");
  http_message_free(&m);
  CHECK(egress_conn_reply(c, "HTTP/1.1 403 Forbidden\r\n\r\n", 26, 1) == 0);
  buf to_client = BUF_INIT;
  client_bytes(&e.rs, 1, &to_client);
  CHECK(to_client.len == 26 && sent(&e.rs, 'C', 1) && egress_conn_finished(c));
  CHECK(egress_conn_reply(c, "more", 4, 0) == -1);
  buf_free(&to_client);
  egress_conn_forget(c);
  CHECK(egress_relay_find(e.r, 1) == NULL);
  env_close(&e);
}

static void a_head_over_the_limit_is_431_however_it_arrives(void) {
  env e;
  env_open(&e);
  egress_conn *c = new_client(&e, 7);
  say_text(e.r, 'D', 7, "GET http://a.example/ HTTP/1.1\r\nX: ");
  char chunk[4096];
  memset(chunk, 'a', sizeof chunk);
  http_message m;
  int status = 0, rc = 0;
  const char *why = NULL;
  for (int i = 0; i < 20 && rc == 0; i++) { /* 80 KiB, a piece at a time */
    say(e.r, 'D', 7, chunk, sizeof chunk);
    rc = egress_conn_head(c, HTTP_PROXY_REQUEST, &m, &status, &why);
    http_message_free(&m);
  }
  CHECK(rc == -1 && status == 431);
  env_close(&e);
}

typedef struct wait_conn {
  egress_conn *c;
  int want; /* 1 connected, 2 finished */
} wait_conn;

static int conn_ready(void *ctx) {
  wait_conn *w = ctx;
  const char *a, *k, *why;
  if (w->want == 1) return egress_conn_connected(w->c, &a, &k, &why) != 0;
  return egress_conn_finished(w->c);
}

static egress_upstream loopback(int port) {
  static net_rule allow_loopback;
  net_cidr_parse("127.0.0.1", &allow_loopback.cidr, NULL);
  allow_loopback.allow = 1;
  egress_upstream u = {.host = "127.0.0.1", .port = port, .policy = &allow_loopback, .npolicy = 1, .need_rule = 1,
                       .timeout = 5, .label = "the test upstream"};
  return u;
}

static void one_request_per_connection_to_an_upstream_that_would_serve_more(void) {
  upstream up = start_upstream(5);
  env e;
  env_open(&e);
  egress_conn *c = new_client(&e, 2);
  http_message m;
  int status;
  const char *why;
  say_text(e.r, 'D', 2, "GET http://127.0.0.1/first HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                        "GET /smuggled HTTP/1.1\r\nHost: evil.test\r\n\r\n");
  CHECK(egress_conn_head(c, HTTP_PROXY_REQUEST, &m, &status, &why) == 1);
  http_message_free(&m);
  egress_upstream u = loopback(up.port);
  char err[256];
  CHECK(egress_conn_connect(c, &u, err, sizeof err) == 0);
  wait_conn w = {c, 1};
  CHECK(run_until(e.lp, conn_ready, &w, 5));
  const char *head = "GET /first HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  egress_conn_splice(c, head, strlen(head), 1, NULL);
  say_text(e.r, 'D', 2, "GET /later HTTP/1.1\r\nHost: evil.test\r\n\r\n");
  w.want = 2;
  CHECK(run_until(e.lp, conn_ready, &w, 5)); /* finished although the upstream keeps the connection */
  buf lines = BUF_INIT, answer = BUF_INIT;
  usleep(100000);
  served(&up, &lines);
  CHECK_STR(lines.data ? lines.data : "", "GET /first HTTP/1.1\n");
  client_bytes(&e.rs, 2, &answer);
  CHECK(answer.len && strstr(answer.data, "\r\n\r\nxxxxx") != NULL && sent(&e.rs, 'C', 2));
  egress_conn_stats st;
  egress_conn_stats_get(c, &st);
  CHECK(st.exchange && st.dropped == strlen("GET /smuggled HTTP/1.1\r\nHost: evil.test\r\n\r\n") +
                                       strlen("GET /later HTTP/1.1\r\nHost: evil.test\r\n\r\n"));
  CHECK_STR(st.address, "127.0.0.1");
  buf_free(&lines);
  buf_free(&answer);
  env_close(&e);
  stop_upstream(&up);
}

static int window_full(void *ctx) { return ((relay_side *)ctx)->d_bytes >= EGRESS_WINDOW; }

static void the_host_never_sends_past_the_window(void) {
  upstream up = start_upstream(3u << 20); /* 3 MiB answer */
  env e;
  env_open(&e);
  egress_conn *c = new_client(&e, 3);
  http_message m;
  int status;
  const char *why;
  say_text(e.r, 'D', 3, "GET http://127.0.0.1/big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(egress_conn_head(c, HTTP_PROXY_REQUEST, &m, &status, &why) == 1);
  http_message_free(&m);
  egress_upstream u = loopback(up.port);
  char err[256];
  CHECK(egress_conn_connect(c, &u, err, sizeof err) == 0);
  wait_conn w = {c, 1};
  CHECK(run_until(e.lp, conn_ready, &w, 5));
  const char *head = "GET /big HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  egress_conn_splice(c, head, strlen(head), 1, NULL);
  CHECK(run_until(e.lp, window_full, &e.rs, 5));
  for (int i = 0; i < 20; i++) loop_run_once(e.lp, 0.01); /* time to send more, were it allowed */
  CHECK(e.rs.d_bytes == EGRESS_WINDOW); /* exactly the window: nothing past it without a K */
  char credit[64];
  snprintf(credit, sizeof credit, "K 3 %u\n", EGRESS_WINDOW);
  CHECK(egress_relay_input(e.r, credit, strlen(credit)) == 0);
  CHECK(run_until(e.lp, window_full, &e.rs, 5)); /* (counted from 0 again below) */
  e.rs.d_bytes = 0;
  for (int k = 0; k < 4 && !egress_conn_finished(c); k++) {
    run_until(e.lp, window_full, &e.rs, 2);
    e.rs.d_bytes = 0;
    CHECK(egress_relay_input(e.r, credit, strlen(credit)) == 0);
  }
  w.want = 2;
  CHECK(run_until(e.lp, conn_ready, &w, 5));
  egress_conn_stats st;
  egress_conn_stats_get(c, &st);
  CHECK(st.down >= (3 << 20));
  env_close(&e);
  stop_upstream(&up);
}

static void max_bytes_ends_the_connection_that_passes_it(void) {
  upstream up = start_upstream(200000);
  env e;
  env_open(&e);
  egress_relay_limit(e.r, 50000);
  egress_conn *c = new_client(&e, 4);
  http_message m;
  int status;
  const char *why;
  say_text(e.r, 'D', 4, "GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(egress_conn_head(c, HTTP_PROXY_REQUEST, &m, &status, &why) == 1);
  http_message_free(&m);
  egress_upstream u = loopback(up.port);
  char err[256];
  CHECK(egress_conn_connect(c, &u, err, sizeof err) == 0);
  wait_conn w = {c, 1};
  CHECK(run_until(e.lp, conn_ready, &w, 5));
  egress_conn_splice(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 35, 0, NULL);
  w.want = 2;
  CHECK(run_until(e.lp, conn_ready, &w, 5));
  egress_conn_stats st;
  egress_conn_stats_get(c, &st);
  CHECK_STR(st.kind, "max_bytes");
  CHECK(strstr(st.error, "network.max_bytes") != NULL);
  egress_counters n;
  egress_relay_counters(e.r, &n);
  CHECK(n.connections == 1 && n.open == 0 && n.bytes_up + n.bytes_down > 50000);
  env_close(&e);
  stop_upstream(&up);
}

static void the_relays_end_reaches_every_connection(void) {
  env e;
  env_open(&e);
  egress_conn *a = new_client(&e, 5), *b = new_client(&e, 6);
  egress_relay_stream_ended(e.r, NULL, "the exec ended");
  const char *why = NULL, *conn_why = NULL;
  CHECK(egress_relay_ended(e.r, &why) && strstr(why, "the exec ended"));
  CHECK(egress_conn_closed(a, &conn_why) && strstr(conn_why, "egress relay is gone"));
  CHECK(egress_conn_closed(b, &conn_why));
  CHECK(egress_relay_input(e.r, "A 9 0\n", 6) == -1); /* nothing after the end */
  env_close(&e);
  /* a relay that says something outside its protocol ends */
  env_open(&e);
  CHECK(egress_relay_input(e.r, "garbage that is not a frame\n", 28) == -1);
  CHECK(egress_relay_ended(e.r, &why) && strstr(why, "outside its protocol"));
  env_close(&e);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  RUN(a_head_is_parsed_once_and_a_refusal_closes);
  RUN(a_head_over_the_limit_is_431_however_it_arrives);
  RUN(one_request_per_connection_to_an_upstream_that_would_serve_more);
  RUN(the_host_never_sends_past_the_window);
  RUN(max_bytes_ends_the_connection_that_passes_it);
  RUN(the_relays_end_reaches_every_connection);
  TEST_EXIT();
}

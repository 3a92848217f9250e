/* http_head: hosts made canonical or refused, request and response heads, the
 * framing a head declares, where a head ends however it arrives, and a fuzz of
 * the parser: no crash, every accepted host canonical, linear time. */
#include "../../src/core/http_head.h"

#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

/* The canonical host, or "ERR: why". */
static const char *host(const char *text) {
  static char out[400];
  http_host h;
  const char *why = NULL;
  if (http_host_parse(text, strlen(text), &h, &why) < 0) {
    snprintf(out, sizeof out, "ERR: %s", why);
    return out;
  }
  snprintf(out, sizeof out, "%s (%d)", h.name, h.family);
  return out;
}

static int refused_with(const char *text, const char *part) {
  const char *r = host(text);
  int ok = strncmp(r, "ERR: ", 5) == 0 && strstr(r, part) != NULL;
  if (!ok) fprintf(stderr, "    %s -> %s (wanted a refusal naming '%s')\n", text, r, part);
  return ok;
}

static void hosts_are_made_canonical(void) {
  CHECK_STR(host("API.Example.COM."), "api.example.com (0)");
  CHECK_STR(host("xn--bcher-kva.example"), "xn--bcher-kva.example (0)");
  CHECK_STR(host("a-b.c1.example"), "a-b.c1.example (0)");
  CHECK_STR(host("localhost"), "localhost (0)");
  CHECK_STR(host("1.2.3.4"), "1.2.3.4 (4)");
  CHECK_STR(host("[::1]"), "::1 (6)");
  CHECK_STR(host("[2001:DB8:0:0::1]"), "2001:db8::1 (6)");
  CHECK_STR(host("::ffff:127.0.0.1"), "::ffff:127.0.0.1 (6)");
  CHECK_STR(host("0.0.0.0"), "0.0.0.0 (4)");
  CHECK_STR(host("0x.example"), "0x.example (0)"); /* a name whose first label looks hex: not its last */
}

static void what_two_parsers_read_two_ways_is_refused(void) {
  http_host h;
  const char *why = NULL;
  CHECK(http_host_parse("evil.test\0.example.test", 23, &h, &why) < 0 && strstr(why, "NUL"));
  CHECK(refused_with("x@uploads.example.test", "userinfo"));
  CHECK(refused_with("evil.test%2f.example.test", "percent"));
  CHECK(refused_with("evil.test/.example.test", "'/'"));
  CHECK(refused_with("evil.test?.example.test", "'?'"));
  CHECK(refused_with("evil.test#.example.test", "'#'"));
  CHECK(refused_with("evil.test\\.example.test", "'\\'"));
  CHECK(refused_with("\xc3\xa9vil.example.test", "non-ASCII"));
  CHECK(refused_with("evil test", "space"));
  CHECK(refused_with("evil\t.test", "control"));
  CHECK(refused_with("under_score.example", "character no host name has"));
  CHECK(refused_with("evil..example", "empty label"));
  CHECK(refused_with(".example", "empty label"));
  CHECK(refused_with("-a.example", "'-'"));
  CHECK(refused_with("a-.example", "'-'"));
  char long_label[80];
  memset(long_label, 'a', 64);
  strcpy(long_label + 64, ".example");
  CHECK(refused_with(long_label, "63"));
  char long_name[300];
  for (int i = 0; i < 64; i++) memcpy(long_name + i * 4, "abc.", 4);
  strcpy(long_name + 256, "x");
  CHECK(refused_with(long_name, "253"));
  CHECK(refused_with("", "no host"));
}

static void ipv4_spelled_as_a_name_is_refused(void) {
  CHECK(refused_with("0x0b000001", "IPv4"));
  CHECK(refused_with("184549377", "IPv4"));
  CHECK(refused_with("11.1", "IPv4"));
  CHECK(refused_with("013.0.0.1", "IPv4"));
  CHECK(refused_with("0xb.0.0.1", "IPv4"));
  CHECK(refused_with("1.2.3.4.5", "IPv4"));
  CHECK(refused_with("evil.test.1", "IPv4"));
  CHECK(refused_with("evil.0x1f", "IPv4"));
  CHECK(refused_with("256.1.1.1", "IPv4"));
  CHECK(refused_with("[fe80::1%eth0]", "zone"));
  CHECK(refused_with("[::1", "']'"));
  CHECK(refused_with("[1.2.3.4]", "IPv6"));
}

/* A locale where bytes above 0x7f may be letters to <ctype.h>: the answers stay the same. */
static void the_locale_changes_nothing(void) {
  const char *locales[] = {"C.UTF-8", "en_US.ISO-8859-1", "de_DE.ISO-8859-1", "C"};
  for (size_t i = 0; i < sizeof locales / sizeof locales[0]; i++) {
    setlocale(LC_ALL, locales[i]); /* one that is not installed leaves the last in place */
    CHECK(refused_with("\xe9vil.example.test", "non-ASCII"));
    CHECK(refused_with("\xc3\xa9vil.example.test", "non-ASCII"));
    CHECK_STR(host("\x41PI.example"), "api.example (0)");
  }
  setlocale(LC_ALL, "C");
}

static const char *authority(const char *text, int default_port) {
  static char out[400];
  http_host h;
  const char *why = NULL;
  if (http_authority_parse(text, strlen(text), default_port, &h, &why) < 0) {
    snprintf(out, sizeof out, "ERR: %s", why);
    return out;
  }
  snprintf(out, sizeof out, "%s %d", h.name, h.port);
  return out;
}

static void authorities_name_one_host_and_port(void) {
  CHECK_STR(authority("Example.com:8080", 80), "example.com 8080");
  CHECK_STR(authority("example.com", 80), "example.com 80");
  CHECK_STR(authority("example.com:", 80), "example.com 80");
  CHECK_STR(authority("[::1]:443", 0), "::1 443");
  CHECK(strncmp(authority("example.com", 0), "ERR: no port", 12) == 0);
  CHECK(strncmp(authority("example.com:0", 80), "ERR: a port", 11) == 0);
  CHECK(strncmp(authority("example.com:65536", 80), "ERR: a port", 11) == 0);
  CHECK(strncmp(authority("example.com:+80", 80), "ERR: a port", 11) == 0);
  CHECK(strncmp(authority("a.example:pw@evil.test", 80), "ERR: userinfo", 13) == 0);
  CHECK(strncmp(authority("[::1]x", 80), "ERR: after ']'", 14) == 0);
  CHECK(strncmp(authority("evil.test/.example.test:443", 0), "ERR: a '/'", 10) == 0);
}

/* ---- requests ---- */

typedef struct parsed {
  int rc, status;
  const char *why;
  http_message m;
} parsed;

static parsed request(const char *head, int kind) {
  parsed p;
  p.rc = http_request_parse(head, strlen(head), kind, &p.m, &p.status, &p.why);
  return p;
}

static void proxy_requests_in_absolute_and_authority_form(void) {
  parsed p = request("GET http://API.example.com:8080/a/b?c=d HTTP/1.1\r\nHost: api.example.com:8080\r\n"
                     "X-Pad:   spaced value \t \r\n\r\n", HTTP_PROXY_REQUEST);
  CHECK(p.rc == 0);
  CHECK_STR(p.m.method, "GET");
  CHECK_STR(p.m.target_host.name, "api.example.com");
  CHECK(p.m.target_host.port == 8080 && p.m.form == HTTP_ABSOLUTE_FORM && p.m.minor == 1);
  CHECK_STR(p.m.path, "/a/b?c=d");
  CHECK(p.m.nfields == 2);
  CHECK_STR(p.m.fields[1].value, "spaced value");
  CHECK(p.m.has_host && p.m.host.port == 8080);
  CHECK(p.m.body == HTTP_BODY_NONE);
  http_message_free(&p.m);

  p = request("GET http://example.com?q=1 HTTP/1.0\r\n\r\n", HTTP_PROXY_REQUEST);
  CHECK(p.rc == 0);
  CHECK_STR(p.m.path, "/?q=1");
  CHECK(p.m.target_host.port == 80 && p.m.minor == 0);
  http_message_free(&p.m);

  p = request("CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n", HTTP_PROXY_REQUEST);
  CHECK(p.rc == 0 && p.m.form == HTTP_AUTHORITY_FORM && p.m.target_host.family == 6);
  CHECK_STR(p.m.target_host.name, "2001:db8::1");
  http_message_free(&p.m);

  p = request("POST /v1/x HTTP/1.1\r\nHost: api.example.com\r\nContent-Length: 12\r\n\r\n", HTTP_ORIGIN_REQUEST);
  CHECK(p.rc == 0 && p.m.body == HTTP_BODY_LENGTH && p.m.length == 12 && p.m.host.port == 443);
  http_message_free(&p.m);

  p = request("POST /v1/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n", HTTP_ORIGIN_REQUEST);
  CHECK(p.rc == 0 && p.m.body == HTTP_BODY_CHUNKED);
  http_message_free(&p.m);
}

static int refused_request(const char *head, size_t len, int kind, int status, const char *part) {
  parsed p;
  p.rc = http_request_parse(head, len, kind, &p.m, &p.status, &p.why);
  int ok = p.rc < 0 && p.status == status && p.why && strstr(p.why, part);
  if (!ok) fprintf(stderr, "    %.60s -> rc %d status %d why %s (wanted %d '%s')\n", head, p.rc, p.status,
                   p.why ? p.why : "-", status, part);
  http_message_free(&p.m);
  return ok;
}
#define REFUSED(head, status, part) refused_request(head, sizeof(head) - 1, HTTP_PROXY_REQUEST, status, part)

static void malformed_requests_are_refused_naming_the_part(void) {
  CHECK(REFUSED("GET http://evil.test\0.example.test/ HTTP/1.1\r\nHost: a\r\n\r\n", 400, "NUL"));
  CHECK(REFUSED("GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n", 400, "NUL"));
  CHECK(REFUSED("GET http://x@a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "userinfo"));
  CHECK(REFUSED("CONNECT evil.test/.example.test:443 HTTP/1.1\r\n\r\n", 400, "'/'"));
  CHECK(REFUSED("GET https://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "CONNECT"));
  CHECK(REFUSED("GET ftp://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "scheme"));
  CHECK(REFUSED("GET /relative HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "in full"));
  CHECK(REFUSED("GET http://a.example/#frag HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "fragment"));
  CHECK(REFUSED("GET http://a.example/ HTTP/2.0\r\nHost: a.example\r\n\r\n", 400, "version"));
  CHECK(REFUSED("GET  http://a.example/ HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "request line"));
  CHECK(REFUSED("GET http://a.example/ HTTP/1.1\nHost: a.example\n\n", 400, "CRLF"));
  CHECK(REFUSED("GET http://a.example/ HTTP/1.1\r\nX: a\rb\r\nHost: a.example\r\n\r\n", 400, "bare CR"));
  CHECK(REFUSED("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nX: a\r\n b\r\n\r\n", 400, "folded"));
  CHECK(REFUSED("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nX : a\r\n\r\n", 400, "token"));
  CHECK(REFUSED("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n", 400, "two Host"));
  CHECK(REFUSED("GET http://a.example/ HTTP/1.1\r\n\r\n", 400, "without a Host"));
  CHECK(REFUSED("GET http://a.example/\x80 HTTP/1.1\r\nHost: a.example\r\n\r\n", 400, "non-ASCII"));
  CHECK(REFUSED("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n"
                "Transfer-Encoding: chunked\r\n\r\n", 400, "both"));
  CHECK(REFUSED("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                400, "two Content-Length"));
  CHECK(REFUSED("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5, 5\r\n\r\n", 400, "one number"));
  CHECK(REFUSED("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nContent-Length: -1\r\n\r\n", 400, "one number"));
  CHECK(REFUSED("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
                "chunked alone"));
  CHECK(REFUSED("POST http://a.example/ HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n"
                "Transfer-Encoding: chunked\r\n\r\n", 501, "chunked alone"));
  CHECK(REFUSED("POST http://a.example/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"));
  CHECK(refused_request("GET http://a/ HTTP/1.1\r\n\r\n", 26, HTTP_ORIGIN_REQUEST, 400, "origin form"));
}

static void too_many_fields_is_431(void) {
  buf b = BUF_INIT;
  buf_append_str(&b, "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\n");
  for (int i = 0; i < HTTP_FIELDS_MAX; i++) buf_append_str(&b, "X: y\r\n");
  buf_append_str(&b, "\r\n");
  CHECK(refused_request(b.data, b.len, HTTP_PROXY_REQUEST, 431, "128"));
  buf_free(&b);
}

/* ---- where a head ends ---- */

static void a_head_ends_once_however_it_arrives(void) {
  const char *head = "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\nBODY";
  size_t scanned = 0, n = strlen(head);
  long end = 0;
  for (size_t i = 1; i <= n && end == 0; i++) end = http_head_end(head, i, &scanned); /* a byte at a time */
  CHECK(end == (long)strlen("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"));
  scanned = 0;
  CHECK(http_head_end("GET / HTTP/1.1\nHost: a\n\nrest", 28, &scanned) == 24); /* bare LFs end it: refused later */
  buf big = BUF_INIT;
  buf_append_str(&big, "GET http://a/ HTTP/1.1\r\nX: ");
  while (big.len < HTTP_HEAD_MAX + 10) buf_append_char(&big, 'a');
  scanned = 0;
  CHECK(http_head_end(big.data, big.len, &scanned) == -1);
  buf_append_str(&big, "\r\n\r\n");
  scanned = 0;
  CHECK(http_head_end(big.data, big.len, &scanned) == -1); /* complete, but too long: the same */
  buf_free(&big);
}

/* ---- responses ---- */

static void responses_say_how_their_body_ends(void) {
  http_message m;
  const char *why;
  const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
  CHECK(http_response_parse(h, strlen(h), "GET", &m, &why) == 0 && m.status == 200 && m.body == HTTP_BODY_LENGTH);
  http_message_free(&m);
  CHECK(http_response_parse(h, strlen(h), "HEAD", &m, &why) == 0 && m.body == HTTP_BODY_NONE);
  http_message_free(&m);
  h = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 10\r\n\r\n";
  CHECK(http_response_parse(h, strlen(h), "GET", &m, &why) == 0 && m.body == HTTP_BODY_CHUNKED);
  http_message_free(&m);
  h = "HTTP/1.0 200\r\n\r\n";
  CHECK(http_response_parse(h, strlen(h), "GET", &m, &why) == 0 && m.body == HTTP_BODY_CLOSE);
  http_message_free(&m);
  h = "HTTP/1.1 204 No Content\r\n\r\n";
  CHECK(http_response_parse(h, strlen(h), "GET", &m, &why) == 0 && m.body == HTTP_BODY_NONE);
  http_message_free(&m);
  h = "HTTP/1.1 100 Continue\r\n\r\n";
  CHECK(http_response_parse(h, strlen(h), "POST", &m, &why) == 0 && m.status == 100 && m.body == HTTP_BODY_NONE);
  http_message_free(&m);
  h = "HTTP/2 200\r\n\r\n";
  CHECK(http_response_parse(h, strlen(h), "GET", &m, &why) < 0);
  http_message_free(&m);
}

static void refusals_are_one_line_responses(void) {
  buf b = BUF_INIT;
  http_refusal(&b, 403, "no rule allows x:443\r\nInjected: yes");
  CHECK(strncmp(b.data, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
  CHECK(strstr(b.data, "X-Luagent-Refused: 403\r\n") != NULL);
  CHECK(strstr(b.data, "\r\n\r\nluagent: no rule allows x:443  Injected: yes\n") != NULL);
  buf_free(&b);
}

/* ---- fuzz ---- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next_random(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An accepted host must parse again to itself: canonical is a fixed point. */
static int canonical(const http_host *h) {
  http_host again;
  const char *why;
  char text[HTTP_HOST_MAX + 2];
  if (h->family == 6) snprintf(text, sizeof text, "[%s]", h->name);
  else snprintf(text, sizeof text, "%s", h->name);
  if (http_host_parse(text, strlen(text), &again, &why) < 0) return 0;
  if (strcmp(again.name, h->name) != 0) return 0;
  for (const char *p = h->name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == ':')) return 0;
  return 1;
}

static const char *const SEEDS[] = {
  "GET http://api.example.com/x HTTP/1.1\r\nHost: api.example.com\r\n\r\n",
  "CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n",
  "POST http://a.example:8080/p?q HTTP/1.1\r\nHost: a.example:8080\r\nContent-Length: 4\r\n\r\n",
  "GET http://[::1]:80/ HTTP/1.0\r\nX-A: b\r\n\r\n",
  "POST /in HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
};
static const char ALPHABET[] = "\0\r\n \t:@%/?#\\[].-_0x9aZ\x80\xff;,";

static void mutate(buf *b) {
  int edits = 1 + (int)(next_random() % 8);
  for (int e = 0; e < edits && b->len > 0; e++) {
    size_t at = next_random() % b->len;
    char c = ALPHABET[next_random() % (sizeof ALPHABET - 1)];
    switch (next_random() % 4) {
    case 0: b->data[at] = c; break;
    case 1: buf_append_char(b, c); memmove(b->data + at + 1, b->data + at, b->len - at - 1); b->data[at] = c; break;
    case 2: memmove(b->data + at, b->data + at + 1, b->len - at - 1); b->len--; break;
    default: for (int k = 0; k < 1 + (int)(next_random() % 200); k++) buf_append_char(b, c); break;
    }
  }
}

static void fuzzed_heads_never_crash_and_accept_only_canonical_hosts(void) {
  double worst = 0;
  int accepted = 0;
  for (int i = 0; i < 6000; i++) {
    buf b = BUF_INIT;
    if (i % 3 == 0) { /* random bytes, sometimes ended like a head */
      size_t n = next_random() % 512;
      for (size_t k = 0; k < n; k++) buf_append_char(&b, ALPHABET[next_random() % (sizeof ALPHABET - 1)]);
      buf_append_str(&b, "\r\n\r\n");
    } else {
      buf_append_str(&b, SEEDS[next_random() % (sizeof SEEDS / sizeof SEEDS[0])]);
      mutate(&b);
    }
    for (int kind = HTTP_PROXY_REQUEST; kind <= HTTP_ORIGIN_REQUEST; kind++) {
      http_message m;
      int status;
      const char *why = NULL;
      double t0 = cpu_seconds();
      size_t scanned = 0;
      (void)http_head_end(b.data, b.len, &scanned);
      int rc = http_request_parse(b.data, b.len, kind, &m, &status, &why);
      double spent = cpu_seconds() - t0;
      if (spent > worst) worst = spent;
      if (rc == 0) {
        accepted++;
        if (m.form != HTTP_ORIGIN_FORM) CHECK(canonical(&m.target_host));
        if (m.has_host) CHECK(canonical(&m.host));
      } else {
        CHECK(why != NULL && (status == 400 || status == 431 || status == 501));
      }
      http_message_free(&m);
    }
    buf_free(&b);
  }
  CHECK(accepted > 100); /* the mutations keep some heads whole: the accepting path runs too */
  CHECK(worst < 0.05);
}

/* 1 MiB of the worst shapes a head can take: each parse well under 50 ms of CPU. */
static void hostile_heads_take_linear_time(void) {
  const char *fills[] = {" ", "a", "x: y\r\n", "\r", "\n "};
  for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++) {
    buf b = BUF_INIT;
    buf_append_str(&b, "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nX-Pad: x");
    while (b.len < (1u << 20)) buf_append_str(&b, fills[f]);
    buf_append_str(&b, "y\r\n\r\n");
    double t0 = cpu_seconds();
    size_t scanned = 0;
    long end = http_head_end(b.data, b.len, &scanned);
    http_message m;
    int status;
    const char *why;
    int rc = http_request_parse(b.data, b.len, HTTP_PROXY_REQUEST, &m, &status, &why);
    double spent = cpu_seconds() - t0;
    http_message_free(&m);
    CHECK(end == -1 && rc < 0 && status == 431);
    CHECK(spent < 0.05);
    buf_free(&b);
  }
  /* and under the limit: 60 KB of blanks inside a value, the shape that took 8 s in Lua */
  buf b = BUF_INIT;
  buf_append_str(&b, "GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nX-Pad: x");
  for (int i = 0; i < 60000; i++) buf_append_char(&b, ' ');
  buf_append_str(&b, "y\r\n\r\n");
  double t0 = cpu_seconds();
  http_message m;
  int status;
  const char *why;
  CHECK(http_request_parse(b.data, b.len, HTTP_PROXY_REQUEST, &m, &status, &why) == 0);
  CHECK(cpu_seconds() - t0 < 0.05);
  http_message_free(&m);
  buf_free(&b);
}

int main(void) {
  RUN(hosts_are_made_canonical);
  RUN(what_two_parsers_read_two_ways_is_refused);
  RUN(ipv4_spelled_as_a_name_is_refused);
  RUN(the_locale_changes_nothing);
  RUN(authorities_name_one_host_and_port);
  RUN(proxy_requests_in_absolute_and_authority_form);
  RUN(malformed_requests_are_refused_naming_the_part);
  RUN(too_many_fields_is_431);
  RUN(a_head_ends_once_however_it_arrives);
  RUN(responses_say_how_their_body_ends);
  RUN(refusals_are_one_line_responses);
  RUN(fuzzed_heads_never_crash_and_accept_only_canonical_hosts);
  RUN(hostile_heads_take_linear_time);
  TEST_EXIT();
}

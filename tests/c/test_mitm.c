/* mitm: a real OpenSSL client (through tls_lazy.c, as the binary would load
 * it) trusting only the session CA's PEM handshakes with mitm_tls over
 * memory buffers pumped here; and tls_hello_sni on the hellos it sends. */
#include "../../src/core/mitm.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include "test.h"

typedef struct client {
  SSL_CTX *ctx;
  SSL *ssl;
  BIO *in, *out; /* in: bytes from the server; out: bytes to it */
} client;

static X509 *certificate_of(const buf *pem) {
  BIO *b = BIO_new_mem_buf(pem->data, (int)pem->len);
  X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
  BIO_free(b);
  return x;
}

/* A client trusting only ca_pem, verifying the peer is `expect` (a name or,
 * with ip, an address), sending sni (NULL: none) and ALPN h2, http/1.1. */
static void client_open(client *c, const buf *ca_pem, const char *expect, int ip, const char *sni, int max_version) {
  c->ctx = SSL_CTX_new(TLS_client_method());
  X509 *ca = certificate_of(ca_pem);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(c->ctx), ca);
  X509_free(ca);
  SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
  if (max_version) SSL_CTX_ctrl(c->ctx, SSL_CTRL_SET_MAX_PROTO_VERSION, max_version, NULL);
  c->ssl = SSL_new(c->ctx);
  c->in = BIO_new(BIO_s_mem());
  c->out = BIO_new(BIO_s_mem());
  SSL_set_bio(c->ssl, c->in, c->out);
  SSL_set_connect_state(c->ssl);
  if (ip) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), expect);
  else SSL_set1_host(c->ssl, expect);
  if (sni) SSL_ctrl(c->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)sni);
  static const unsigned char alpn[] = "\x02h2\x08http/1.1";
  SSL_set_alpn_protos(c->ssl, alpn, sizeof alpn - 1);
}

static void client_close(client *c) {
  SSL_free(c->ssl);
  SSL_CTX_free(c->ctx);
}

static void client_output(client *c, buf *out) {
  char chunk[16384];
  int got;
  while ((got = BIO_read(c->out, chunk, sizeof chunk)) > 0) buf_append(out, chunk, (size_t)got);
}

/* Moves bytes both ways until neither side has any to send. Returns the
 * last mitm_tls_feed result; the server's plaintext goes to plain and the
 * client's to client_plain. */
static int pump(client *c, mitm_tls *t, buf *plain, buf *client_plain) {
  int rc = 0;
  for (int round = 0; round < 50; round++) {
    char chunk[16384];
    int got;
    if (!SSL_is_init_finished(c->ssl)) SSL_do_handshake(c->ssl);
    while ((got = SSL_read(c->ssl, chunk, sizeof chunk)) > 0) buf_append(client_plain, chunk, (size_t)got);
    buf to_server = BUF_INIT, to_client = BUF_INIT;
    client_output(c, &to_server);
    if (to_server.len) rc = mitm_tls_feed(t, to_server.data, to_server.len, plain);
    mitm_tls_take(t, &to_client);
    if (to_client.len) BIO_write(c->in, to_client.data, (int)to_client.len);
    int idle = to_server.len == 0 && to_client.len == 0;
    buf_free(&to_server);
    buf_free(&to_client);
    if (idle && round > 0) break;
  }
  return rc;
}

typedef struct session {
  mitm_ca *ca;
  buf pem;
  mitm_tls *tls;
  client c;
  buf plain, client_plain;
} session;

static void session_open(session *s, const char *host, const char *expect, int ip, const char *sni, int max_version) {
  char err[256] = "";
  memset(s, 0, sizeof *s);
  s->ca = mitm_ca_new("luagent test session CA", err, sizeof err);
  CHECK_STR(err, "");
  CHECK(s->ca != NULL && mitm_ca_pem(s->ca, &s->pem) == 0);
  s->tls = mitm_tls_new(s->ca, host, err, sizeof err);
  CHECK_STR(err, "");
  client_open(&s->c, &s->pem, expect, ip, sni, max_version);
}

static void session_close(session *s) {
  client_close(&s->c);
  mitm_tls_free(s->tls);
  mitm_ca_free(s->ca);
  buf_free(&s->pem);
  buf_free(&s->plain);
  buf_free(&s->client_plain);
}

/* n bytes of every value (NUL and 0xff included) in an uneven pattern */
static char *binary_bytes(size_t n) {
  char *p = malloc(n);
  for (size_t i = 0; i < n; i++) p[i] = (char)((i * 131 + i / 7) & 0xff);
  return p;
}

static void a_client_trusting_the_ca_pem_talks_both_ways(void) {
  session s;
  session_open(&s, "api.example.com", "api.example.com", 0, "api.example.com", 0);
  /* the reply may be written before the handshake: it waits */
  static const char reply[] = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
  CHECK(mitm_tls_write(s.tls, reply, sizeof reply - 1) == 0);
  CHECK(!mitm_tls_established(s.tls));
  CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == 0);
  CHECK(mitm_tls_established(s.tls) && SSL_is_init_finished(s.c.ssl));
  CHECK(SSL_get_verify_result(s.c.ssl) == X509_V_OK);
  CHECK_STR(mitm_tls_alpn(s.tls), "http/1.1");
  CHECK(s.client_plain.len == sizeof reply - 1 && memcmp(s.client_plain.data, reply, s.client_plain.len) == 0);
  /* 100 KB across many records, byte-exact */
  size_t n = 100000;
  char *request = binary_bytes(n);
  CHECK(SSL_write(s.c.ssl, request, (int)n) == (int)n);
  CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == 0);
  CHECK(s.plain.len == n && memcmp(s.plain.data, request, n) == 0);
  buf_clear(&s.client_plain);
  CHECK(mitm_tls_write(s.tls, request, n) == 0);
  CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == 0);
  CHECK(s.client_plain.len == n && memcmp(s.client_plain.data, request, n) == 0);
  free(request);
  CHECK_STR(mitm_tls_error(s.tls), "");
  session_close(&s);
}

static void close_notify_goes_both_ways(void) {
  session s;
  session_open(&s, "api.example.com", "api.example.com", 0, "api.example.com", 0);
  pump(&s.c, s.tls, &s.plain, &s.client_plain);
  CHECK(mitm_tls_write(s.tls, "bye", 3) == 0 && mitm_tls_shutdown(s.tls) == 0);
  CHECK(mitm_tls_write(s.tls, "late", 4) == -1);
  pump(&s.c, s.tls, &s.plain, &s.client_plain);
  CHECK(s.client_plain.len == 3 && memcmp(s.client_plain.data, "bye", 3) == 0);
  char c;
  CHECK(SSL_read(s.c.ssl, &c, 1) == 0 && SSL_get_error(s.c.ssl, 0) == SSL_ERROR_ZERO_RETURN);
  CHECK(!mitm_tls_peer_closed(s.tls));
  SSL_shutdown(s.c.ssl);
  CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == 0);
  CHECK(mitm_tls_peer_closed(s.tls));
  session_close(&s);
}

static void tls_1_2_works_too(void) {
  session s;
  session_open(&s, "api.example.com", "api.example.com", 0, "api.example.com", TLS1_2_VERSION);
  CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == 0);
  CHECK(mitm_tls_established(s.tls) && SSL_get_verify_result(s.c.ssl) == X509_V_OK);
  CHECK_STR(mitm_tls_alpn(s.tls), "http/1.1");
  SSL_write(s.c.ssl, "GET / HTTP/1.1\r\n\r\n", 18);
  pump(&s.c, s.tls, &s.plain, &s.client_plain);
  CHECK_STR(s.plain.data, "GET / HTTP/1.1\r\n\r\n");
  session_close(&s);
}

static void a_client_expecting_another_host_refuses(void) {
  session s;
  session_open(&s, "api.example.com", "other.example.com", 0, "other.example.com", 0);
  CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == -1);
  CHECK(SSL_get_verify_result(s.c.ssl) == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(!SSL_is_init_finished(s.c.ssl));
  const char *why = mitm_tls_error(s.tls);
  CHECK(strstr(why, "the client refused the session") != NULL);
  CHECK(strchr(why, '\n') == NULL);
  fprintf(stderr, "    (reason: %s)\n", why);
  CHECK(s.plain.len == 0);
  CHECK(mitm_tls_feed(s.tls, "x", 1, &s.plain) == -1); /* stays dead */
  session_close(&s);
}

static void a_client_trusting_another_ca_refuses(void) {
  session s, other;
  session_open(&s, "api.example.com", "api.example.com", 0, "api.example.com", 0);
  session_open(&other, "api.example.com", "api.example.com", 0, "api.example.com", 0);
  /* other's client trusts other's CA, but talks to s's server */
  CHECK(pump(&other.c, s.tls, &s.plain, &s.client_plain) == -1);
  CHECK(SSL_get_verify_result(other.c.ssl) == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  CHECK(strstr(mitm_tls_error(s.tls), "unknown ca") != NULL);
  session_close(&other);
  session_close(&s);
}

static void an_ip_literal_gets_an_ip_certificate(void) {
  const char *hosts[] = {"127.0.0.1", "::1"};
  for (int i = 0; i < 2; i++) {
    session s;
    session_open(&s, hosts[i], hosts[i], 1, NULL, 0);
    CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == 0);
    CHECK(mitm_tls_established(s.tls) && SSL_get_verify_result(s.c.ssl) == X509_V_OK);
    session_close(&s);
  }
  /* the certificate for an address does not pass for a name */
  session s;
  session_open(&s, "127.0.0.1", "localhost", 0, NULL, 0);
  CHECK(pump(&s.c, s.tls, &s.plain, &s.client_plain) == -1);
  CHECK(SSL_get_verify_result(s.c.ssl) == X509_V_ERR_HOSTNAME_MISMATCH);
  session_close(&s);
}

/* A second session for a host presents the very certificate of the first. */
static void a_host_s_leaf_is_made_once_per_ca(void) {
  session s;
  session_open(&s, "api.example.com", "api.example.com", 0, "api.example.com", 0);
  pump(&s.c, s.tls, &s.plain, &s.client_plain);
  char err[256] = "";
  const char *hosts[] = {"API.example.com", "other.example.com"};
  for (int i = 0; i < 2; i++) {
    mitm_tls *again = mitm_tls_new(s.ca, hosts[i], err, sizeof err);
    client c;
    client_open(&c, &s.pem, hosts[i], 0, hosts[i], 0);
    buf plain = BUF_INIT, client_plain = BUF_INIT;
    CHECK(pump(&c, again, &plain, &client_plain) == 0);
    X509 *first = SSL_get1_peer_certificate(s.c.ssl), *second = SSL_get1_peer_certificate(c.ssl);
    CHECK(first && second && (X509_cmp(first, second) == 0) == (i == 0));
    X509_free(first);
    X509_free(second);
    client_close(&c);
    mitm_tls_free(again);
  }
  session_close(&s);
}

static void the_ca_pem_is_one_ca_certificate_and_no_key(void) {
  char err[256] = "";
  mitm_ca *ca = mitm_ca_new("luagent session", err, sizeof err);
  buf pem = BUF_INIT;
  CHECK(ca && mitm_ca_pem(ca, &pem) == 0);
  CHECK(strncmp(pem.data, "-----BEGIN CERTIFICATE-----\n", 28) == 0);
  CHECK(strstr(pem.data, "PRIVATE KEY") == NULL && strstr(pem.data, "EC PARAMETERS") == NULL);
  CHECK(strstr(pem.data + 1, "-----BEGIN") == NULL);
  X509 *x = certificate_of(&pem);
  CHECK(x && X509_check_ca(x) == 1);
  X509_free(x);
  /* two CAs are two keys: a fresh one per session */
  mitm_ca *again = mitm_ca_new("luagent session", err, sizeof err);
  buf pem2 = BUF_INIT;
  mitm_ca_pem(again, &pem2);
  CHECK(pem.len > 0 && (pem.len != pem2.len || memcmp(pem.data, pem2.data, pem.len) != 0));
  mitm_ca_free(again);
  mitm_ca_free(ca);
  buf_free(&pem);
  buf_free(&pem2);
}

static void refuses_a_host_that_is_neither_name_nor_address(void) {
  char err[256] = "";
  mitm_ca *ca = mitm_ca_new("luagent session", err, sizeof err);
  CHECK(mitm_tls_new(ca, "a.example.com,DNS:bank.example", err, sizeof err) == NULL);
  CHECK_STR(err, "not a host name or an IP address: a.example.com,DNS:bank.example");
  CHECK(mitm_tls_new(ca, "", err, sizeof err) == NULL);
  mitm_ca_free(ca);
}

static void garbage_from_the_client_is_a_tls_failure(void) {
  char err[256] = "";
  mitm_ca *ca = mitm_ca_new("luagent session", err, sizeof err);
  mitm_tls *t = mitm_tls_new(ca, "api.example.com", err, sizeof err);
  buf plain = BUF_INIT;
  static const char get[] = "GET / HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
  CHECK(mitm_tls_feed(t, get, sizeof get - 1, &plain) == -1);
  CHECK(strstr(mitm_tls_error(t), "TLS handshake failed") != NULL);
  fprintf(stderr, "    (reason: %s)\n", mitm_tls_error(t));
  CHECK(plain.len == 0);
  mitm_tls_free(t);
  mitm_ca_free(ca);
}

/* ---- tls_hello_sni ---- */

/* The first flight of a client with that SNI (NULL: none). */
static void client_hello(const char *sni, buf *out) {
  char err[256];
  mitm_ca *ca = mitm_ca_new("x", err, sizeof err);
  buf pem = BUF_INIT;
  mitm_ca_pem(ca, &pem);
  client c;
  client_open(&c, &pem, "api.example.com", 0, sni, 0);
  SSL_do_handshake(c.ssl);
  client_output(&c, out);
  client_close(&c);
  buf_free(&pem);
  mitm_ca_free(ca);
}

static int sni(const char *data, size_t n, char *name, size_t cap) {
  const char *why = NULL;
  int rc = tls_hello_sni(data, n, name, cap, &why);
  if (rc == -1 && !why) fprintf(stderr, "    -1 without a reason\n"), rc = -99;
  return rc;
}

static void reads_the_server_name_of_a_real_hello(void) {
  buf hello = BUF_INIT;
  client_hello("API.Example.COM", &hello);
  char name[256];
  CHECK(sni(hello.data, hello.len, name, sizeof name) == 1);
  CHECK_STR(name, "api.example.com");
  int all_zero = 1;
  for (size_t n = 0; n < hello.len; n++)
    if (sni(hello.data, n, name, sizeof name) != 0) all_zero = 0, fprintf(stderr, "    prefix %zu\n", n);
  CHECK(all_zero);
  char small[8];
  CHECK(sni(hello.data, hello.len, small, sizeof small) == -1);
  buf_free(&hello);
}

static void a_hello_without_sni_is_complete_without_a_name(void) {
  buf hello = BUF_INIT;
  client_hello(NULL, &hello);
  char name[256] = "";
  CHECK(sni(hello.data, hello.len, name, sizeof name) == 2);
  for (size_t n = 0; n < hello.len; n++) CHECK(sni(hello.data, n, name, sizeof name) == 0);
  buf_free(&hello);
}

/* The same handshake message in two records, split at `at`. */
static void split_in_two_records(const buf *hello, size_t at, buf *out) {
  const unsigned char *h = (const unsigned char *)hello->data;
  size_t body = (size_t)h[3] << 8 | h[4];
  const unsigned char *msg = h + 5;
  size_t parts[2] = {at, body - at};
  for (int i = 0; i < 2; i++) {
    unsigned char header[5] = {0x16, 0x03, 0x01, (unsigned char)(parts[i] >> 8), (unsigned char)parts[i]};
    buf_append(out, header, 5);
    buf_append(out, msg + (i ? at : 0), parts[i]);
  }
}

static void a_hello_may_span_records(void) {
  buf hello = BUF_INIT, split = BUF_INIT;
  client_hello("api.example.com", &hello);
  size_t cuts[] = {1, 3, 4, 40, 100};
  for (int i = 0; i < 5; i++) {
    buf_clear(&split);
    split_in_two_records(&hello, cuts[i], &split);
    char name[256] = "";
    CHECK(sni(split.data, split.len, name, sizeof name) == 1);
    CHECK_STR(name, "api.example.com");
    for (size_t n = 0; n < split.len; n++) CHECK(sni(split.data, n, name, sizeof name) == 0);
  }
  buf_free(&hello);
  buf_free(&split);
}

static void what_is_not_a_hello(void) {
  char name[256];
  const char *why = NULL;
  CHECK(tls_hello_sni("GET / HTTP/1.1\r\n", 16, name, sizeof name, &why) == -1);
  CHECK_STR(why, "not a TLS handshake record");
  CHECK(tls_hello_sni("G", 1, name, sizeof name, &why) == -1);
  CHECK(tls_hello_sni("\x16\x01", 2, name, sizeof name, &why) == -1);
  CHECK_STR(why, "not a TLS record version");
  CHECK(tls_hello_sni("\x15\x03\x03\x00\x02\x02\x28", 7, name, sizeof name, &why) == -1); /* an alert */
  /* a ServerHello */
  CHECK(tls_hello_sni("\x16\x03\x03\x00\x04\x02\x00\x00\x26", 9, name, sizeof name, &why) == -1);
  CHECK_STR(why, "a TLS handshake that is not a ClientHello");
  /* a ClientHello said to be 64 KiB */
  CHECK(tls_hello_sni("\x16\x03\x01\x00\x04\x01\x01\x00\x00", 9, name, sizeof name, &why) == -1);
  CHECK_STR(why, "a ClientHello larger than 16 KiB");
  CHECK(tls_hello_sni("\x16\x03\x01\x00\x00", 5, name, sizeof name, &why) == -1);
  /* a complete hello whose body is cut short inside */
  CHECK(tls_hello_sni("\x16\x03\x01\x00\x06\x01\x00\x00\x02\x03\x03", 11, name, sizeof name, &why) == -1);
  CHECK_STR(why, "a malformed ClientHello");
  /* a real hello with a byte of its server name made a space */
  buf hello = BUF_INIT;
  client_hello("api.example.com", &hello);
  char *at = memmem(hello.data, hello.len, "api.example.com", 15);
  CHECK(at != NULL);
  if (at) at[3] = ' ';
  CHECK(tls_hello_sni(hello.data, hello.len, name, sizeof name, &why) == -1);
  CHECK_STR(why, "a server name that is not a host name");
  buf_free(&hello);
  /* random bytes after a plausible header never read past n (ASan watches) */
  char junk[300];
  for (int round = 0; round < 2000; round++) {
    for (size_t i = 0; i < sizeof junk; i++) junk[i] = (char)rand();
    junk[0] = 0x16, junk[1] = 3, junk[3] = 1, junk[4] = 0x20, junk[5] = 1, junk[6] = 0, junk[7] = 1, junk[8] = 0x1c;
    size_t n = (size_t)rand() % sizeof junk;
    char *copy = malloc(n ? n : 1);
    memcpy(copy, junk, n);
    int rc = tls_hello_sni(copy, n, name, sizeof name, &why);
    CHECK(rc >= -1 && rc <= 2);
    free(copy);
  }
}

/* A hand-made ClientHello with these extensions (each already framed). */
static void hand_made_hello(const char *const *exts, const size_t *lens, int n, buf *out) {
  buf e = BUF_INIT, body = BUF_INIT;
  for (int i = 0; i < n; i++) buf_append(&e, exts[i], lens[i]);
  buf_append(&body, "\x03\x03", 2);
  for (int i = 0; i < 32; i++) buf_append_char(&body, 1);
  buf_append(&body, "\x00\x00\x02\x13\x01\x01\x00", 7);
  buf_append_char(&body, (char)(e.len >> 8)), buf_append_char(&body, (char)(e.len & 255));
  buf_append(&body, e.data, e.len);
  size_t hs = body.len + 4;
  buf_append(out, "\x16\x03\x01", 3);
  buf_append_char(out, (char)(hs >> 8)), buf_append_char(out, (char)(hs & 255));
  buf_append_char(out, 1), buf_append_char(out, 0);
  buf_append_char(out, (char)(body.len >> 8)), buf_append_char(out, (char)(body.len & 255));
  buf_append(out, body.data, body.len);
  buf_free(&e);
  buf_free(&body);
}

static int refused_hello(const char *const *exts, const size_t *lens, int n, const char *part) {
  buf hello = BUF_INIT;
  hand_made_hello(exts, lens, n, &hello);
  char name[256];
  const char *why = NULL;
  int rc = tls_hello_sni(hello.data, hello.len, name, sizeof name, &why);
  buf_free(&hello);
  int ok = rc == -1 && why && strstr(why, part);
  if (!ok) fprintf(stderr, "    rc %d why %s (wanted '%s')\n", rc, why ? why : "-", part);
  return ok;
}

#define SNI_ONE "\x00\x00\x00\x15\x00\x13\x00\x00\x10hello.example.te"
static void a_hello_names_one_server_and_hides_none(void) {
  /* server_name: list of (type 0, "hello.example.te") — and a second entry, "evil.test" */
  const char two[] = "\x00\x00\x00\x21\x00\x1f\x00\x00\x10hello.example.te\x00\x00\x09" "evil.test";
  const char one[] = SNI_ONE;
  const char ech[] = "\xfe\x0d\x00\x04\x00\x01\x02\x03";
  const char bad[] = "\x00\x00\x00\x0e\x00\x0c\x00\x00\x09" "evil_test";
  const char *e1[] = {two};
  size_t l1[] = {sizeof two - 1};
  CHECK(refused_hello(e1, l1, 1, "two servers"));
  const char *e2[] = {one, one};
  size_t l2[] = {sizeof one - 1, sizeof one - 1};
  CHECK(refused_hello(e2, l2, 2, "two server_name"));
  const char *e3[] = {one, ech};
  size_t l3[] = {sizeof one - 1, sizeof ech - 1};
  CHECK(refused_hello(e3, l3, 2, "encrypted_client_hello"));
  const char *e4[] = {bad};
  size_t l4[] = {sizeof bad - 1};
  CHECK(refused_hello(e4, l4, 1, "not a host name"));
  buf hello = BUF_INIT; /* the control: one name alone is read */
  const char *e5[] = {one};
  size_t l5[] = {sizeof one - 1};
  hand_made_hello(e5, l5, 1, &hello);
  char name[256];
  const char *why = NULL;
  CHECK(tls_hello_sni(hello.data, hello.len, name, sizeof name, &why) == 1);
  CHECK_STR(name, "hello.example.te");
  buf_free(&hello);
}

int main(void) {
  RUN(a_client_trusting_the_ca_pem_talks_both_ways);
  RUN(close_notify_goes_both_ways);
  RUN(tls_1_2_works_too);
  RUN(a_client_expecting_another_host_refuses);
  RUN(a_client_trusting_another_ca_refuses);
  RUN(an_ip_literal_gets_an_ip_certificate);
  RUN(a_host_s_leaf_is_made_once_per_ca);
  RUN(the_ca_pem_is_one_ca_certificate_and_no_key);
  RUN(refuses_a_host_that_is_neither_name_nor_address);
  RUN(garbage_from_the_client_is_a_tls_failure);
  RUN(reads_the_server_name_of_a_real_hello);
  RUN(a_hello_without_sni_is_complete_without_a_name);
  RUN(a_hello_may_span_records);
  RUN(what_is_not_a_hello);
  RUN(a_hello_names_one_server_and_hides_none);
  TEST_EXIT();
}

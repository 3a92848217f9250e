/* mitm: per-session CA, cached leaf certificates, TLS server sessions over
 * memory BIOs, and the ClientHello reader (mitm.h says what they are for). */
#include "mitm.h"

#include "http_head.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CA_DAYS = 7, HOST_MAX = 253 };

typedef struct mitm_leaf {
  char host[HOST_MAX + 1];
  X509 *cert;
  EVP_PKEY *key;
  struct mitm_leaf *next;
} mitm_leaf;

struct mitm_ca {
  X509 *cert;
  EVP_PKEY *key;
  SSL_CTX *server; /* made with the first session; shared by all of them */
  mitm_leaf *leaves;
};

struct mitm_tls {
  SSL *ssl;
  BIO *from_client, *to_client; /* memory BIOs; the SSL owns them */
  buf pending;                  /* plaintext written before it could be sent */
  int shutdown_wanted, shutdown_sent, peer_closed, failed;
  char error[256];
};

/* ---- errors ---- */

/* The OpenSSL error queue's first reason, or what, into err. Clears the queue. */
static void openssl_error(char *err, size_t errlen, const char *what) {
  unsigned long e = ERR_get_error();
  const char *reason = e ? ERR_reason_error_string(e) : NULL;
  if (errlen) snprintf(err, errlen, "%s%s%s", what, reason ? ": " : "", reason ? reason : "");
  ERR_clear_error();
}

/* ---- keys and certificates ---- */

static EVP_PKEY *new_p256_key(void) {
  EVP_PKEY *key = NULL;
  EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
  if (ctx && EVP_PKEY_keygen_init(ctx) > 0 && EVP_PKEY_CTX_set_group_name(ctx, "P-256") > 0)
    EVP_PKEY_generate(ctx, &key);
  EVP_PKEY_CTX_free(ctx);
  return key;
}

/* A random positive 128-bit serial (RFC 5280 allows up to 20 octets). */
static int set_random_serial(X509 *x) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return -1;
  bytes[0] &= 0x7f;
  bytes[0] |= 0x40; /* never a short number */
  BIGNUM *bn = BN_bin2bn(bytes, sizeof bytes, NULL);
  int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
  BN_free(bn);
  return ok ? 0 : -1;
}

static int add_extension(X509 *x, X509V3_CTX *ctx, int nid, const char *value) {
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
  if (!ext) return -1;
  int ok = X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  return ok ? 0 : -1;
}

/* A version 3 certificate for key with subject CN=cn, valid from an hour ago
 * for CA_DAYS days; issuer fields are the caller's. */
static X509 *new_certificate(EVP_PKEY *key, const char *cn) {
  X509 *x = X509_new();
  if (!x) return NULL;
  X509_NAME *subject = X509_get_subject_name(x);
  if (X509_set_version(x, 2) && set_random_serial(x) == 0 &&
      X509_gmtime_adj(X509_getm_notBefore(x), -3600) && /* the sandbox's clock may lag */
      X509_gmtime_adj(X509_getm_notAfter(x), (long)CA_DAYS * 24 * 3600) &&
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) &&
      X509_set_pubkey(x, key))
    return x;
  X509_free(x);
  return NULL;
}

static int make_ca_certificate(mitm_ca *ca, const char *common_name) {
  ca->cert = new_certificate(ca->key, common_name);
  if (!ca->cert || !X509_set_issuer_name(ca->cert, X509_get_subject_name(ca->cert))) return -1;
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, ca->cert, ca->cert, NULL, NULL, 0);
  if (add_extension(ca->cert, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
      add_extension(ca->cert, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
      add_extension(ca->cert, &ctx, NID_subject_key_identifier, "hash") < 0)
    return -1;
  return X509_sign(ca->cert, ca->key, EVP_sha256()) > 0 ? 0 : -1;
}

mitm_ca *mitm_ca_new(const char *common_name, char *err, size_t errlen) {
  ERR_clear_error();
  mitm_ca *ca = calloc(1, sizeof *ca);
  if (!ca) {
    if (errlen) snprintf(err, errlen, "out of memory");
    return NULL;
  }
  ca->key = new_p256_key();
  if (!ca->key || make_ca_certificate(ca, common_name) < 0) {
    openssl_error(err, errlen, "cannot make the session CA");
    mitm_ca_free(ca);
    return NULL;
  }
  return ca;
}

int mitm_ca_pem(const mitm_ca *ca, buf *out) {
  BIO *mem = BIO_new(BIO_s_mem());
  int rc = mem && PEM_write_bio_X509(mem, ca->cert) ? 0 : -1;
  char chunk[4096];
  int got;
  while (rc == 0 && (got = BIO_read(mem, chunk, sizeof chunk)) > 0)
    if (buf_append(out, chunk, (size_t)got) < 0) rc = -1;
  BIO_free(mem);
  ERR_clear_error();
  return rc;
}

void mitm_ca_free(mitm_ca *ca) {
  if (!ca) return;
  for (mitm_leaf *l = ca->leaves, *next; l; l = next) {
    next = l->next;
    X509_free(l->cert);
    EVP_PKEY_free(l->key);
    free(l);
  }
  SSL_CTX_free(ca->server);
  X509_free(ca->cert);
  EVP_PKEY_free(ca->key);
  free(ca);
}

/* ---- leaf certificates ---- */

static int is_ip_literal(const char *host) {
  unsigned char addr[16];
  return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

/* The host goes into an extension's config text ("DNS:<host>"), so only the
 * characters of a host name are taken: a comma would add another name. */
static int is_plain_name(const char *host) {
  size_t len = strlen(host);
  return len > 0 && len <= HOST_MAX &&
         strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") == len;
}

static int add_leaf_extensions(X509 *leaf, X509 *ca_cert, const char *host) {
  char san[HOST_MAX + 8];
  snprintf(san, sizeof san, "%s:%s", is_ip_literal(host) ? "IP" : "DNS", host);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, ca_cert, leaf, NULL, NULL, 0);
  if (add_extension(leaf, &ctx, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
      add_extension(leaf, &ctx, NID_key_usage, "critical,digitalSignature") < 0 ||
      add_extension(leaf, &ctx, NID_ext_key_usage, "serverAuth") < 0 ||
      add_extension(leaf, &ctx, NID_subject_alt_name, san) < 0 ||
      add_extension(leaf, &ctx, NID_subject_key_identifier, "hash") < 0 ||
      add_extension(leaf, &ctx, NID_authority_key_identifier, "keyid:always") < 0)
    return -1;
  return 0;
}

static mitm_leaf *make_leaf(mitm_ca *ca, const char *host) {
  mitm_leaf *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  snprintf(l->host, sizeof l->host, "%s", host);
  l->key = new_p256_key();
  l->cert = l->key ? new_certificate(l->key, host) : NULL;
  if (!l->cert || !X509_set_issuer_name(l->cert, X509_get_subject_name(ca->cert)) ||
      add_leaf_extensions(l->cert, ca->cert, host) < 0 || X509_sign(l->cert, ca->key, EVP_sha256()) <= 0) {
    X509_free(l->cert);
    EVP_PKEY_free(l->key);
    free(l);
    return NULL;
  }
  return l;
}

/* The cached leaf for host (names compared without case), made if new. */
static mitm_leaf *leaf_for(mitm_ca *ca, const char *host) {
  for (mitm_leaf *l = ca->leaves; l; l = l->next)
    if (strcasecmp(l->host, host) == 0) return l;
  mitm_leaf *l = make_leaf(ca, host);
  if (l) l->next = ca->leaves, ca->leaves = l;
  return l;
}

/* ---- sessions ---- */

/* We relay HTTP/1.1 only: chosen when offered; otherwise no ALPN at all, so
 * a client that offered only h2 falls back or gives up by its own rules. */
static int select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                         unsigned int inlen, void *arg) {
  (void)ssl, (void)arg;
  static const unsigned char ours[] = "\x08http/1.1";
  unsigned char *chosen;
  if (SSL_select_next_proto(&chosen, outlen, ours, sizeof ours - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *server_context(mitm_ca *ca) {
  if (ca->server) return ca->server;
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return NULL;
  if (!SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL) ||
      !SSL_CTX_set_num_tickets(ctx, 0)) { /* one connection per session: no resumption */
    SSL_CTX_free(ctx);
    return NULL;
  }
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, NULL);
  return ca->server = ctx;
}

static int start_session(mitm_tls *t, mitm_ca *ca, mitm_leaf *leaf) {
  SSL_CTX *ctx = server_context(ca);
  if (!ctx || !(t->ssl = SSL_new(ctx))) return -1;
  t->from_client = BIO_new(BIO_s_mem());
  t->to_client = BIO_new(BIO_s_mem());
  if (!t->from_client || !t->to_client) {
    BIO_free(t->from_client);
    BIO_free(t->to_client);
    return -1;
  }
  SSL_set_bio(t->ssl, t->from_client, t->to_client);
  SSL_set_accept_state(t->ssl);
  return SSL_use_certificate(t->ssl, leaf->cert) == 1 && SSL_use_PrivateKey(t->ssl, leaf->key) == 1 ? 0 : -1;
}

mitm_tls *mitm_tls_new(mitm_ca *ca, const char *host, char *err, size_t errlen) {
  if (!is_plain_name(host) && !is_ip_literal(host)) {
    if (errlen) snprintf(err, errlen, "not a host name or an IP address: %.64s", host);
    return NULL;
  }
  ERR_clear_error();
  mitm_tls *t = calloc(1, sizeof *t);
  mitm_leaf *leaf = t ? leaf_for(ca, host) : NULL;
  if (!leaf || start_session(t, ca, leaf) < 0) {
    openssl_error(err, errlen, "cannot start the TLS session");
    mitm_tls_free(t);
    return NULL;
  }
  return t;
}

/* -1 with the reason of a failed SSL call r. An alert the client sent says
 * it refused us (OpenSSL names it "... alert ..."). */
static int fail(mitm_tls *t, int r, const char *during) {
  int code = SSL_get_error(t->ssl, r);
  unsigned long e = ERR_peek_error();
  const char *reason = e ? ERR_reason_error_string(e) : NULL;
  if (reason && strstr(reason, "alert"))
    snprintf(t->error, sizeof t->error, "TLS %s: the client refused the session (%s)", during, reason);
  else if (reason)
    snprintf(t->error, sizeof t->error, "TLS %s failed: %s", during, reason);
  else if (code == SSL_ERROR_SYSCALL || code == SSL_ERROR_SSL)
    snprintf(t->error, sizeof t->error, "TLS %s failed: the client's records are not TLS", during);
  else
    snprintf(t->error, sizeof t->error, "TLS %s failed (SSL error %d)", during, code);
  ERR_clear_error();
  t->failed = 1;
  return -1;
}

static int wants_more(mitm_tls *t, int r) {
  int code = SSL_get_error(t->ssl, r);
  return code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE;
}

/* Sends the buffered plaintext, then close_notify when asked for. */
static int flush_pending(mitm_tls *t) {
  while (t->pending.len > 0) {
    int chunk = t->pending.len > 1 << 30 ? 1 << 30 : (int)t->pending.len;
    int r = SSL_write(t->ssl, t->pending.data, chunk);
    if (r <= 0) return wants_more(t, r) ? 0 : fail(t, r, "write");
    buf_consume(&t->pending, (size_t)r);
  }
  if (t->shutdown_wanted && !t->shutdown_sent) {
    SSL_shutdown(t->ssl); /* 0: our close_notify is queued; the client's may follow */
    t->shutdown_sent = 1;
    ERR_clear_error();
  }
  return 0;
}

static int read_plaintext(mitm_tls *t, buf *plain) {
  char chunk[16384];
  for (;;) {
    int r = SSL_read(t->ssl, chunk, sizeof chunk);
    if (r > 0) {
      if (buf_append(plain, chunk, (size_t)r) < 0) return -1;
      continue;
    }
    if (SSL_get_error(t->ssl, r) == SSL_ERROR_ZERO_RETURN) {
      t->peer_closed = 1;
      return 0;
    }
    return wants_more(t, r) ? 0 : fail(t, r, "read");
  }
}

int mitm_tls_feed(mitm_tls *t, const void *cipher, size_t n, buf *plain) {
  if (t->failed) return -1;
  ERR_clear_error();
  for (size_t at = 0; at < n;) { /* BIO_write takes an int */
    int chunk = n - at > 1 << 30 ? 1 << 30 : (int)(n - at);
    if (BIO_write(t->from_client, (const char *)cipher + at, chunk) != chunk) return fail(t, 0, "input");
    at += (size_t)chunk;
  }
  if (!SSL_is_init_finished(t->ssl)) {
    int r = SSL_do_handshake(t->ssl);
    if (r <= 0) return wants_more(t, r) ? 0 : fail(t, r, "handshake");
  }
  if (flush_pending(t) < 0) return -1;
  return t->peer_closed ? 0 : read_plaintext(t, plain);
}

int mitm_tls_write(mitm_tls *t, const void *plain, size_t n) {
  if (t->failed || t->shutdown_wanted) return -1;
  if (buf_append(&t->pending, plain, n) < 0) return -1;
  return SSL_is_init_finished(t->ssl) ? flush_pending(t) : 0;
}

int mitm_tls_shutdown(mitm_tls *t) {
  if (t->failed) return -1;
  t->shutdown_wanted = 1;
  return SSL_is_init_finished(t->ssl) ? flush_pending(t) : 0;
}

int mitm_tls_take(mitm_tls *t, buf *cipher) {
  char chunk[16384];
  int got;
  while ((got = BIO_read(t->to_client, chunk, sizeof chunk)) > 0)
    if (buf_append(cipher, chunk, (size_t)got) < 0) return -1;
  return 0;
}

int mitm_tls_established(const mitm_tls *t) { return SSL_is_init_finished(t->ssl); }
int mitm_tls_peer_closed(const mitm_tls *t) { return t->peer_closed; }
const char *mitm_tls_error(const mitm_tls *t) { return t->error; }

const char *mitm_tls_alpn(const mitm_tls *t) {
  static const char http11[] = "http/1.1";
  const unsigned char *proto;
  unsigned int len;
  SSL_get0_alpn_selected(t->ssl, &proto, &len);
  return len == sizeof http11 - 1 && memcmp(proto, http11, len) == 0 ? http11 : "";
}

void mitm_tls_free(mitm_tls *t) {
  if (!t) return;
  SSL_free(t->ssl); /* and its BIOs */
  buf_free(&t->pending);
  free(t);
}

/* ---- the ClientHello's server name ---- */

enum { HELLO_MAX = 16384, RECORD_MAX = 16384 + 2048 };

/* A reader over bytes that never reads past its end. */
typedef struct reader {
  const unsigned char *p;
  size_t left;
} reader;

static int read_u8(reader *r, unsigned *v) {
  if (r->left < 1) return -1;
  *v = r->p[0], r->p++, r->left--;
  return 0;
}

static int read_u16(reader *r, unsigned *v) {
  if (r->left < 2) return -1;
  *v = (unsigned)r->p[0] << 8 | r->p[1], r->p += 2, r->left -= 2;
  return 0;
}

/* A sub-reader over the next len bytes, which r skips. */
static int read_block(reader *r, size_t len, reader *block) {
  if (r->left < len) return -1;
  block->p = r->p, block->left = len;
  r->p += len, r->left -= len;
  return 0;
}

/* A block prefixed by its length in lenbytes (1 or 2) bytes. */
static int read_vector(reader *r, int lenbytes, reader *block) {
  unsigned len;
  if ((lenbytes == 1 ? read_u8(r, &len) : read_u16(r, &len)) < 0) return -1;
  return read_block(r, len, block);
}

static int not_hello(const char **why, const char *reason) {
  if (why) *why = reason;
  return -1;
}

/* The handshake bytes of the records at the start of data, into msg (room
 * for HELLO_MAX + 4), until the whole ClientHello is there. Returns 1 when it
 * is (*msglen its size with header), 0 when more bytes are needed, -1. */
static int gather_hello(const unsigned char *d, size_t n, unsigned char *msg, size_t *msglen, const char **why) {
  size_t at = 0, got = 0;
  while (at < n) {
    if (d[at] != 0x16) return not_hello(why, "not a TLS handshake record");
    if (at + 1 < n && d[at + 1] != 3) return not_hello(why, "not a TLS record version");
    if (at + 5 > n) return 0;
    size_t len = (size_t)d[at + 3] << 8 | d[at + 4];
    if (len == 0 || len > RECORD_MAX) return not_hello(why, "a TLS record of an impossible length");
    size_t avail = n - at - 5 < len ? n - at - 5 : len;
    if (got + avail > HELLO_MAX + 4) avail = HELLO_MAX + 4 - got;
    memcpy(msg + got, d + at + 5, avail);
    got += avail;
    if (got >= 1 && msg[0] != 1) return not_hello(why, "a TLS handshake that is not a ClientHello");
    if (got >= 4) {
      size_t hello = (size_t)msg[1] << 16 | (size_t)msg[2] << 8 | msg[3];
      if (hello > HELLO_MAX) return not_hello(why, "a ClientHello larger than 16 KiB");
      if (got >= hello + 4) return *msglen = hello + 4, 1;
    }
    at += 5 + len;
  }
  return 0;
}

/* The one host_name of a server_name extension's body, canonical
 * (http_head.h): a list naming two servers is refused, since only one of them
 * could be the name the rules judged. */
static int read_server_name(reader *ext, char *name, size_t cap, const char **why) {
  reader list, host;
  unsigned type;
  int found = 0;
  if (read_vector(ext, 2, &list) < 0 || ext->left != 0) return not_hello(why, "a malformed server_name extension");
  while (list.left > 0) {
    if (read_u8(&list, &type) < 0 || read_vector(&list, 2, &host) < 0)
      return not_hello(why, "a malformed server_name extension");
    if (type != 0) return not_hello(why, "a server_name entry of an unknown type");
    if (found) return not_hello(why, "a ClientHello that names two servers");
    http_host canonical;
    const char *bad = NULL;
    if (http_host_parse((const char *)host.p, host.left, &canonical, &bad) < 0 || canonical.family != 0)
      return not_hello(why, "a server name that is not a host name");
    if (strlen(canonical.name) >= cap) return not_hello(why, "a server name longer than the room for it");
    strcpy(name, canonical.name);
    found = 1;
  }
  return found ? 1 : 2;
}

#define EXT_SERVER_NAME 0
#define EXT_ENCRYPTED_CLIENT_HELLO 0xfe0d

/* The ClientHello body: version, random, session id, cipher suites,
 * compression methods, then (optionally) the extensions: one server_name at
 * most, and no encrypted_client_hello (whose inner hello would name a server
 * nobody here can read). */
static int hello_server_name(reader *body, char *name, size_t cap, const char **why) {
  reader skip, exts, ext;
  unsigned version, type;
  int rc = 2, seen = 0;
  if (read_u16(body, &version) < 0 || read_block(body, 32, &skip) < 0 || read_vector(body, 1, &skip) < 0 ||
      skip.left > 32 || read_vector(body, 2, &skip) < 0 || read_vector(body, 1, &skip) < 0)
    return not_hello(why, "a malformed ClientHello");
  if (version >> 8 != 3) return not_hello(why, "a ClientHello of an unknown version");
  if (body->left == 0) return 2;
  if (read_vector(body, 2, &exts) < 0 || body->left != 0) return not_hello(why, "malformed ClientHello extensions");
  while (exts.left > 0) {
    if (read_u16(&exts, &type) < 0 || read_vector(&exts, 2, &ext) < 0)
      return not_hello(why, "malformed ClientHello extensions");
    if (type == EXT_ENCRYPTED_CLIENT_HELLO)
      return not_hello(why, "a ClientHello with encrypted_client_hello (its real server name is hidden)");
    if (type != EXT_SERVER_NAME) continue;
    if (seen++) return not_hello(why, "a ClientHello with two server_name extensions");
    rc = read_server_name(&ext, name, cap, why);
    if (rc < 0) return rc;
  }
  return rc;
}

int tls_hello_sni(const char *data, size_t n, char *name, size_t cap, const char **why) {
  unsigned char msg[HELLO_MAX + 4];
  size_t msglen = 0;
  int rc = gather_hello((const unsigned char *)data, n, msg, &msglen, why);
  if (rc <= 0) return rc;
  reader body = {msg + 4, msglen - 4};
  return hello_server_name(&body, name, cap, why);
}

/* tls_lazy: OpenSSL 3 (libssl.so.3, libcrypto.so.3), loaded on first use.
 *
 * Only a sandbox with secrets bound to hosts needs TLS of its own (mitm.c);
 * libcurl brings its own copy for everything else. Linking OpenSSL would
 * make every start-up pay its loading, as linking libcurl would
 * (curl_lazy.c, which this follows): so the binary does not link it, and
 * these definitions of the OpenSSL functions we use dlopen the two libraries
 * the first time one is called and forward to them.
 *
 * Several OpenSSL "functions" are macros over another symbol; the table
 * lists the real one (SSL_CTX_set_min_proto_version and
 * SSL_set_tlsext_host_name are SSL_CTX_ctrl and SSL_ctrl; BIO_pending is
 * BIO_ctrl_pending; EVP_EC_gen is avoided for the generic key generation). */
#include <dlfcn.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>

/* X(library, return type, name, parameters, arguments); V for void functions */
#define TLS_FUNCTIONS(X, V)                                                                          \
  X(crypto, unsigned long, ERR_get_error, (void), ())                                                \
  X(crypto, unsigned long, ERR_peek_error, (void), ())                                               \
  V(crypto, ERR_clear_error, (void), ())                                                             \
  X(crypto, const char *, ERR_reason_error_string, (unsigned long e), (e))                           \
  X(crypto, EVP_PKEY_CTX *, EVP_PKEY_CTX_new_from_name, (OSSL_LIB_CTX * lib, const char *name,       \
                                                        const char *props), (lib, name, props))      \
  X(crypto, int, EVP_PKEY_keygen_init, (EVP_PKEY_CTX * ctx), (ctx))                                  \
  X(crypto, int, EVP_PKEY_CTX_set_group_name, (EVP_PKEY_CTX * ctx, const char *name), (ctx, name))   \
  X(crypto, int, EVP_PKEY_generate, (EVP_PKEY_CTX * ctx, EVP_PKEY **key), (ctx, key))                \
  V(crypto, EVP_PKEY_CTX_free, (EVP_PKEY_CTX * ctx), (ctx))                                          \
  V(crypto, EVP_PKEY_free, (EVP_PKEY * key), (key))                                                  \
  X(crypto, const EVP_MD *, EVP_sha256, (void), ())                                                  \
  X(crypto, int, RAND_bytes, (unsigned char *out, int n), (out, n))                                  \
  X(crypto, BIGNUM *, BN_bin2bn, (const unsigned char *s, int len, BIGNUM *ret), (s, len, ret))      \
  V(crypto, BN_free, (BIGNUM * bn), (bn))                                                            \
  X(crypto, ASN1_INTEGER *, BN_to_ASN1_INTEGER, (const BIGNUM *bn, ASN1_INTEGER *ai), (bn, ai))      \
  X(crypto, X509 *, X509_new, (void), ())                                                            \
  V(crypto, X509_free, (X509 * x), (x))                                                              \
  X(crypto, ASN1_INTEGER *, X509_get_serialNumber, (X509 * x), (x))                                  \
  X(crypto, X509_NAME *, X509_get_subject_name, (const X509 *x), (x))                                \
  X(crypto, int, X509_set_issuer_name, (X509 * x, const X509_NAME *name), (x, name))                 \
  X(crypto, int, X509_set_version, (X509 * x, long version), (x, version))                           \
  X(crypto, int, X509_set_pubkey, (X509 * x, EVP_PKEY *key), (x, key))                               \
  X(crypto, ASN1_TIME *, X509_getm_notBefore, (const X509 *x), (x))                                  \
  X(crypto, ASN1_TIME *, X509_getm_notAfter, (const X509 *x), (x))                                   \
  X(crypto, ASN1_TIME *, X509_gmtime_adj, (ASN1_TIME * t, long adj), (t, adj))                       \
  X(crypto, int, X509_NAME_add_entry_by_txt, (X509_NAME * name, const char *field, int type,         \
                                              const unsigned char *bytes, int len, int loc, int set), \
    (name, field, type, bytes, len, loc, set))                                                       \
  V(crypto, X509V3_set_ctx, (X509V3_CTX * ctx, X509 *issuer, X509 *subject, X509_REQ *req,           \
                             X509_CRL *crl, int flags), (ctx, issuer, subject, req, crl, flags))     \
  X(crypto, X509_EXTENSION *, X509V3_EXT_conf_nid, (LHASH_OF(CONF_VALUE) * conf, X509V3_CTX *ctx,    \
                                                    int nid, const char *value), (conf, ctx, nid, value)) \
  X(crypto, int, X509_add_ext, (X509 * x, X509_EXTENSION *ext, int loc), (x, ext, loc))              \
  V(crypto, X509_EXTENSION_free, (X509_EXTENSION * ext), (ext))                                      \
  X(crypto, int, X509_sign, (X509 * x, EVP_PKEY *key, const EVP_MD *md), (x, key, md))               \
  X(crypto, int, X509_check_ca, (X509 * x), (x))                                                     \
  X(crypto, int, X509_cmp, (const X509 *a, const X509 *b), (a, b))                                                     \
  X(crypto, const char *, X509_verify_cert_error_string, (long n), (n))                              \
  X(crypto, int, X509_STORE_add_cert, (X509_STORE * store, X509 *x), (store, x))                     \
  X(crypto, int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM * p, const char *ip), (p, ip))    \
  X(crypto, const BIO_METHOD *, BIO_s_mem, (void), ())                                               \
  X(crypto, BIO *, BIO_new, (const BIO_METHOD *type), (type))                                        \
  X(crypto, BIO *, BIO_new_mem_buf, (const void *data, int len), (data, len))                        \
  X(crypto, int, BIO_read, (BIO * b, void *data, int len), (b, data, len))                           \
  X(crypto, int, BIO_write, (BIO * b, const void *data, int len), (b, data, len))                    \
  X(crypto, int, BIO_free, (BIO * b), (b))                                                           \
  X(crypto, int, PEM_write_bio_X509, (BIO * b, const X509 *x), (b, x))                               \
  X(crypto, X509 *, PEM_read_bio_X509, (BIO * b, X509 **x, pem_password_cb *cb, void *u), (b, x, cb, u)) \
  X(ssl, const SSL_METHOD *, TLS_server_method, (void), ())                                          \
  X(ssl, const SSL_METHOD *, TLS_client_method, (void), ())                                          \
  X(ssl, SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *method), (method))                               \
  V(ssl, SSL_CTX_free, (SSL_CTX * ctx), (ctx))                                                       \
  X(ssl, long, SSL_CTX_ctrl, (SSL_CTX * ctx, int cmd, long larg, void *parg), (ctx, cmd, larg, parg)) \
  X(ssl, int, SSL_CTX_set_num_tickets, (SSL_CTX * ctx, size_t n), (ctx, n))                          \
  V(ssl, SSL_CTX_set_alpn_select_cb, (SSL_CTX * ctx, SSL_CTX_alpn_select_cb_func cb, void *arg),     \
    (ctx, cb, arg))                                                                                  \
  V(ssl, SSL_CTX_set_verify, (SSL_CTX * ctx, int mode, SSL_verify_cb cb), (ctx, mode, cb))           \
  X(ssl, X509_STORE *, SSL_CTX_get_cert_store, (const SSL_CTX *ctx), (ctx))                          \
  X(ssl, int, SSL_select_next_proto, (unsigned char **out, unsigned char *outlen,                    \
                                      const unsigned char *server, unsigned int server_len,          \
                                      const unsigned char *client, unsigned int client_len),         \
    (out, outlen, server, server_len, client, client_len))                                           \
  X(ssl, SSL *, SSL_new, (SSL_CTX * ctx), (ctx))                                                     \
  V(ssl, SSL_free, (SSL * s), (s))                                                                   \
  V(ssl, SSL_set_bio, (SSL * s, BIO *rbio, BIO *wbio), (s, rbio, wbio))                              \
  V(ssl, SSL_set_accept_state, (SSL * s), (s))                                                       \
  V(ssl, SSL_set_connect_state, (SSL * s), (s))                                                      \
  X(ssl, int, SSL_use_certificate, (SSL * s, X509 *x), (s, x))                                       \
  X(ssl, int, SSL_use_PrivateKey, (SSL * s, EVP_PKEY *key), (s, key))                                \
  X(ssl, int, SSL_do_handshake, (SSL * s), (s))                                                      \
  X(ssl, int, SSL_is_init_finished, (const SSL *s), (s))                                             \
  X(ssl, int, SSL_get_error, (const SSL *s, int ret), (s, ret))                                      \
  X(ssl, int, SSL_read, (SSL * s, void *data, int n), (s, data, n))                                  \
  X(ssl, int, SSL_write, (SSL * s, const void *data, int n), (s, data, n))                           \
  X(ssl, int, SSL_shutdown, (SSL * s), (s))                                                          \
  V(ssl, SSL_get0_alpn_selected, (const SSL *s, const unsigned char **data, unsigned int *len),      \
    (s, data, len))                                                                                  \
  X(ssl, int, SSL_set_alpn_protos, (SSL * s, const unsigned char *protos, unsigned int len),         \
    (s, protos, len))                                                                                \
  X(ssl, long, SSL_ctrl, (SSL * s, int cmd, long larg, void *parg), (s, cmd, larg, parg))            \
  X(ssl, int, SSL_set1_host, (SSL * s, const char *host), (s, host))                                 \
  X(ssl, X509_VERIFY_PARAM *, SSL_get0_param, (SSL * s), (s))                                        \
  X(ssl, long, SSL_get_verify_result, (const SSL *s), (s))                                           \
  X(ssl, X509 *, SSL_get1_peer_certificate, (const SSL *s), (s))

#define DECLARE_POINTER(lib, ret, name, params, args) static ret(*real_##name) params;
#define DECLARE_VOID_POINTER(lib, name, params, args) static void(*real_##name) params;
TLS_FUNCTIONS(DECLARE_POINTER, DECLARE_VOID_POINTER)

static void *open_library(const char *soname) {
  void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "luagent: cannot load %s: %s\n"
                    "luagent: install OpenSSL 3 with: apt-get install -y libssl3\n", soname, dlerror());
    exit(1);
  }
  return lib;
}

static void *resolve(void *lib, const char *soname, const char *name) {
  void *f = dlsym(lib, name);
  if (!f) {
    fprintf(stderr, "luagent: %s lacks %s (older than OpenSSL 3?)\n", soname, name);
    exit(1);
  }
  return f;
}

static void load_openssl(void) {
  static int loaded;
  if (loaded) return;
  void *crypto = open_library("libcrypto.so.3"); /* first: libssl needs it */
  void *ssl = open_library("libssl.so.3");
  (void)crypto, (void)ssl;
#define RESOLVE(lib, ret, name, params, args) \
  *(void **)(&real_##name) = resolve(lib, "lib" #lib ".so.3", #name);
#define RESOLVE_VOID(lib, name, params, args) RESOLVE(lib, void, name, params, args)
  TLS_FUNCTIONS(RESOLVE, RESOLVE_VOID)
  loaded = 1;
}

#define FORWARD(lib, ret, name, params, args) \
  ret name params {                           \
    load_openssl();                           \
    return real_##name args;                  \
  }
#define FORWARD_VOID(lib, name, params, args) \
  void name params {                          \
    load_openssl();                           \
    real_##name args;                         \
  }
TLS_FUNCTIONS(FORWARD, FORWARD_VOID)

/* mitm: the host's TLS server end for the hosts a sandbox secret is bound to
 *. The sandbox trusts a per-session CA (mitm_ca) whose key never
 * leaves this process; for each such host a leaf certificate is made on
 * first use, and the sandbox's TLS is terminated here so the placeholder in
 * its request can be replaced with the real credential. The upstream side is
 * libcurl's (verified TLS), not this file's.
 *
 * No sockets: a mitm_tls works over memory buffers and the caller moves the
 * bytes (feed what the client sent, take what goes back). OpenSSL is loaded
 * at first use (tls_lazy.c). Not thread-safe per object; a CA and its
 * sessions belong to one thread. */
#ifndef LUAGENT_MITM_H
#define LUAGENT_MITM_H

#include <stddef.h>

#include "buf.h"

typedef struct mitm_ca mitm_ca;
typedef struct mitm_tls mitm_tls;

/* A fresh EC P-256 key and a self-signed CA certificate with that common
 * name: a random 128-bit serial, valid from an hour ago for 7 days,
 * basicConstraints critical CA:TRUE pathlen:0, keyUsage critical
 * keyCertSign cRLSign, subjectKeyIdentifier. NULL with err on failure. */
mitm_ca *mitm_ca_new(const char *common_name, char *err, size_t errlen);
/* Appends the CA certificate as PEM (the certificate only, never the key).
 * Returns 0, or -1. */
int mitm_ca_pem(const mitm_ca *ca, buf *out);
/* Frees the CA and its cached leaf certificates. Its sessions must be freed first. */
void mitm_ca_free(mitm_ca *ca);

/* A TLS server session (TLS 1.2 or 1.3; ALPN: "http/1.1" only, chosen when
 * the client offers it) presenting a leaf certificate for host: a DNS name,
 * or an IPv4/IPv6 literal (then an IP SAN). The leaf (EC P-256, signed by the
 * CA, serverAuth, authorityKeyIdentifier) is made on first use and cached in
 * the CA per host. NULL with err for a host that is not a plain name or an
 * IP literal, or on an OpenSSL failure. */
mitm_tls *mitm_tls_new(mitm_ca *ca, const char *host, char *err, size_t errlen);
/* Bytes from the client in; appends to plain whatever plaintext is now
 * readable. Returns 0, or -1 on a TLS failure (mitm_tls_error says why);
 * after -1 the session is dead, but take still returns the alert to send. */
int mitm_tls_feed(mitm_tls *t, const void *cipher, size_t n, buf *plain);
/* Plaintext for the client; kept until the handshake has finished. 0, or -1. */
int mitm_tls_write(mitm_tls *t, const void *plain, size_t n);
/* Queues close_notify (after the plaintext written before it). 0, or -1. */
int mitm_tls_shutdown(mitm_tls *t);
/* Appends every ciphertext byte waiting to go to the client (handshake
 * records, data, alerts). Returns 0, or -1 when out of memory. */
int mitm_tls_take(mitm_tls *t, buf *cipher);
/* 1 once the handshake has finished. */
int mitm_tls_established(const mitm_tls *t);
/* 1 once the client has sent close_notify. */
int mitm_tls_peer_closed(const mitm_tls *t);
/* The ALPN protocol agreed ("http/1.1"), or "" when none was. */
const char *mitm_tls_alpn(const mitm_tls *t);
/* Why the last call failed, one line ("" when nothing failed). */
const char *mitm_tls_error(const mitm_tls *t);
void mitm_tls_free(mitm_tls *t);

/* Reads the server_name of a TLS ClientHello at the start of data (its
 * handshake message may span several records; never reads past n). Returns
 *   1  with the name, canonical (http_head.h), in name (cap bytes, NUL included)
 *   2  the hello is complete and names no server
 *   0  more bytes are needed
 *  -1  not a TLS ClientHello, malformed, larger than 16 KiB, naming two
 *      servers (in one list or two server_name extensions), carrying
 *      encrypted_client_hello, or a name that is not a host name (*why says which) */
int tls_hello_sni(const char *data, size_t n, char *name, size_t cap, const char **why);

#endif

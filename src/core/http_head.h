/* http_head: the head of an HTTP/1.x message an untrusted peer sent (a sandbox's
 * request to its proxy, an upstream's response), parsed once into one canonical
 * form (RFC 9110, RFC 9112), in time linear in its length. Every later decision
 * (the rules, the secrets, the request that goes upstream, libcurl's target) is
 * made on that form, never on the text: what two parsers could read two ways
 * (a NUL byte, userinfo, percent-escapes, "/?#\" inside an authority, an IPv4
 * address spelled as a name, a bare CR, a folded line) is refused here, naming
 * the part. Pure C, no I/O.
 *
 * A host is canonical when it is either
 *   a DNS name by the host name grammar alone: letters, digits, hyphens and
 *     dots, labels of 1 to 63 bytes that neither start nor end with a hyphen,
 *     at most 253 bytes, lower case, without a final dot (an international
 *     name goes as punycode, "xn--..."); its last label is not a number
 *     (WHATWG and libcurl read "0x0b000001", "11.1" and "184549377" as IPv4); or
 *   an IP address in inet_pton's strict forms: IPv4 as four decimal octets
 *     without leading zeros, IPv6 as inet_ntop writes it (no zone, no brackets). */
#ifndef LUAGENT_HTTP_HEAD_H
#define LUAGENT_HTTP_HEAD_H

#include <stddef.h>

#include "buf.h"

/* The longest head taken, request or response line, fields and the blank line:
 * however it arrives (at once or a byte at a time), a longer one is refused. */
#define HTTP_HEAD_MAX 65536
/* The most header fields a head may have. */
#define HTTP_FIELDS_MAX 128
/* Room for a canonical host, its NUL included. */
#define HTTP_HOST_MAX 254

typedef struct http_host {
  char name[HTTP_HOST_MAX]; /* canonical (see above) */
  int family;               /* 0: a DNS name; 4 or 6: an IP address */
  int port;                 /* 1..65535; 0 where no port was asked for */
} http_host;

/* A host alone ("api.example.com", "1.2.3.4", "[::1]" or "::1" with brackets
 * allowed or not). Returns 0, or -1 with *why naming what is wrong. */
int http_host_parse(const char *text, size_t len, http_host *out, const char **why);

/* An authority "host[:port]" ("[v6]:port" for IPv6). default_port 0: the port
 * is required (CONNECT's authority form). Returns 0, or -1 with *why. */
int http_authority_parse(const char *text, size_t len, int default_port, http_host *out, const char **why);

/* Where the head ends: scanning data[*scanned..n), returns the head's length
 * (through its blank line), 0 when it has not ended yet (*scanned is where to
 * go on, so bytes that trickle in are looked at once), or -1 when it is longer
 * than HTTP_HEAD_MAX. A line ended by a bare LF ends the head too, so that the
 * parser can refuse it rather than wait for a CRLF that never comes. */
long http_head_end(const char *data, size_t n, size_t *scanned);

typedef struct http_field {
  const char *name, *value; /* NUL-terminated, in the message's own storage; value without OWS */
  size_t name_len, value_len;
} http_field;

enum http_body_kind {
  HTTP_BODY_NONE,    /* no body (a request without Content-Length or Transfer-Encoding; HEAD, 1xx, 204, 304) */
  HTTP_BODY_LENGTH,  /* Content-Length bytes */
  HTTP_BODY_CHUNKED, /* Transfer-Encoding: chunked */
  HTTP_BODY_CLOSE    /* a response read until the connection closes */
};

enum http_target_form { HTTP_ORIGIN_FORM, HTTP_ABSOLUTE_FORM, HTTP_AUTHORITY_FORM };

typedef struct http_message {
  /* request */
  char method[24];
  int form;               /* enum http_target_form */
  http_host target_host;  /* absolute and authority form: the canonical target */
  const char *path;       /* origin form as it goes upstream: "/path?query" ("/" when empty) */
  /* response */
  int status;
  const char *reason;
  /* both */
  int minor;              /* HTTP/1.<minor>: 0 or 1 */
  size_t nfields;
  http_field fields[HTTP_FIELDS_MAX];
  int body;               /* enum http_body_kind */
  unsigned long long length; /* HTTP_BODY_LENGTH */
  int has_host;           /* a Host field, parsed into host */
  http_host host;
  char *storage;          /* the parsed copy every pointer above points into */
} http_message;

/* What a request head may be. */
enum http_request_kind {
  HTTP_PROXY_REQUEST, /* to a proxy: CONNECT host:port, or absolute form (http://host/path) */
  HTTP_ORIGIN_REQUEST /* inside a tunnel: origin form (/path) */
};

/* Parses a request head (through its blank line). Returns 0, or -1 with
 * *status (400 malformed, 431 too large or too many fields, 501 a transfer
 * coding other than chunked) and *why (one line naming the part). Free with
 * http_message_free in both cases. */
int http_request_parse(const char *head, size_t len, int kind, http_message *m, int *status, const char **why);

/* Parses a response head; request_method decides whether a body follows
 * (HEAD: none). Returns 0, or -1 with *why. */
int http_response_parse(const char *head, size_t len, const char *request_method, http_message *m,
                        const char **why);

void http_message_free(http_message *m);

/* The value of the one field named name (case-insensitive), NULL when
 * absent; *count says how many there were. */
const char *http_field_value(const http_message *m, const char *name, int *count);

/* Is the name a token (RFC 9110 5.6.2)? */
int http_is_token(const char *s, size_t n);

/* The answer luagent's proxy gives when it refuses: a short HTTP/1.1
 * response whose body is one line, "luagent: <reason>", with an
 * X-Luagent-Refused header (sandbox/NETWORK.md, "Refusals"). */
void http_refusal(buf *out, int status, const char *reason);

#endif

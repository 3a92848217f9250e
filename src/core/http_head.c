/* http_head: one canonical form of what an untrusted peer sent (http_head.h).
 * Every byte class is tested by explicit ranges, never by <ctype.h>, whose
 * answers change with the locale. */
#include "http_head.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- bytes ---- */

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_hex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

/* tchar (RFC 9110 5.6.2) */
static int is_tchar(unsigned char c) {
  return is_alpha(c) || is_digit(c) || (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

int http_is_token(const char *s, size_t n) {
  if (n == 0) return 0;
  for (size_t i = 0; i < n; i++)
    if (!is_tchar((unsigned char)s[i])) return 0;
  return 1;
}

/* field-vchar, SP and HTAB (RFC 9110 5.5): no NUL, CR, LF or other controls */
static int is_field_byte(unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); }

static int refuse(const char **why, const char *reason) {
  if (why) *why = reason;
  return -1;
}

/* ---- hosts ---- */

/* Why a byte cannot be in a host name: the first one that is not [A-Za-z0-9.-]. */
static const char *bad_host_byte(unsigned char c) {
  if (c == 0) return "a NUL byte in the host";
  if (c == '@') return "userinfo (user@host) in the authority: luagent does not take it";
  if (c == '%') return "a percent-escape in the host";
  if (c == '/' || c == '?' || c == '#' || c == '\\') return "a '/', '?', '#' or '\\' inside the authority";
  if (c < 0x20 || c == ' ' || c == 0x7f) return "a space or control byte in the host";
  if (c >= 0x80) return "a non-ASCII byte in the host (an international name goes as punycode, xn--...)";
  if (c == '[' || c == ']' || c == ':') return "a malformed IPv6 address in the host";
  return "a character no host name has (letters, digits, '-' and '.' only)";
}

/* "0x1f", "0X", "017", "12": a label libcurl and browsers read as a number */
static int numeric_label(const char *s, size_t n) {
  if (n == 0) return 0;
  size_t i = 0;
  if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    for (i = 2; i < n; i++)
      if (!is_hex((unsigned char)s[i])) return 0;
    return 1;
  }
  for (; i < n; i++)
    if (!is_digit((unsigned char)s[i])) return 0;
  return 1;
}

/* Four decimal octets, none with a leading zero (inet_pton's form, and no other). */
static int strict_ipv4(const char *s, size_t n, unsigned char out[4]) {
  char text[16];
  if (n < 7 || n > 15) return 0;
  memcpy(text, s, n);
  text[n] = '\0';
  for (size_t i = 0; i < n; i++) {
    int starts_octet = i == 0 || text[i - 1] == '.';
    if (starts_octet && text[i] == '0' && i + 1 < n && is_digit((unsigned char)text[i + 1])) return 0;
  }
  return inet_pton(AF_INET, text, out) == 1;
}

static int parse_ipv6(const char *s, size_t n, http_host *out, const char **why) {
  char text[64];
  unsigned char addr[16];
  if (n == 0 || n >= sizeof text) return refuse(why, "a malformed IPv6 address in the host");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') return refuse(why, "an IPv6 zone (%...) in the host");
    if (!is_hex(c) && c != ':' && c != '.') return refuse(why, "a malformed IPv6 address in the host");
  }
  memcpy(text, s, n);
  text[n] = '\0';
  if (inet_pton(AF_INET6, text, addr) != 1) return refuse(why, "a malformed IPv6 address in the host");
  inet_ntop(AF_INET6, addr, out->name, sizeof out->name);
  out->family = 6;
  return 0;
}

static int check_labels(const char *s, size_t n, const char **why) {
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '.') continue;
    size_t len = i - start;
    if (len == 0) return refuse(why, "an empty label in the host name ('..', or a leading '.')");
    if (len > 63) return refuse(why, "a label longer than 63 bytes in the host name");
    if (s[start] == '-' || s[i - 1] == '-') return refuse(why, "a label that starts or ends with '-' in the host name");
    start = i + 1;
  }
  return 0;
}

int http_host_parse(const char *text, size_t len, http_host *out, const char **why) {
  memset(out, 0, sizeof *out);
  if (len == 0) return refuse(why, "no host");
  if (text[0] == '[') {
    if (len < 2 || text[len - 1] != ']') return refuse(why, "a '[' without its ']' in the host");
    return parse_ipv6(text + 1, len - 2, out, why);
  }
  if (memchr(text, ':', len)) return parse_ipv6(text, len, out, why); /* a bare IPv6 address (rules, pins) */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)text[i];
    if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '.') return refuse(why, bad_host_byte(c));
  }
  if (len > 1 && text[len - 1] == '.') len--; /* one final dot: the same name */
  if (len > 253) return refuse(why, "a host name longer than 253 bytes");
  if (check_labels(text, len, why) < 0) return -1;
  const char *last = text + len;
  while (last > text && last[-1] != '.') last--;
  unsigned char v4[4];
  if (numeric_label(last, (size_t)(text + len - last))) {
    if (!strict_ipv4(text, len, v4))
      return refuse(why, "an IPv4 address in a form other than four decimal octets (hex, octal, fewer parts)");
    inet_ntop(AF_INET, v4, out->name, sizeof out->name);
    out->family = 4;
    return 0;
  }
  for (size_t i = 0; i < len; i++) out->name[i] = (char)lower((unsigned char)text[i]);
  out->name[len] = '\0';
  return 0;
}

/* Decimal 1..65535, digits only. */
static int parse_port(const char *s, size_t n) {
  if (n == 0 || n > 5) return -1;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit((unsigned char)s[i])) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v >= 1 && v <= 65535 ? v : -1;
}

int http_authority_parse(const char *text, size_t len, int default_port, http_host *out, const char **why) {
  const char *host_end = text + len;
  const char *port = NULL;
  if (len && text[0] == '[') {
    const char *close = memchr(text, ']', len);
    if (!close) return refuse(why, "a '[' without its ']' in the host");
    host_end = close + 1;
    if (host_end < text + len) {
      if (*host_end != ':') return refuse(why, "after ']' only ':port' may follow");
      port = host_end + 1;
    }
  } else {
    for (const char *p = text; p < text + len; p++) {
      unsigned char c = (unsigned char)*p;
      if (c == '@' || c == '%' || c == '/' || c == '?' || c == '#' || c == '\\' || c == 0)
        return refuse(why, bad_host_byte(c)); /* before ':' can cut the text short */
    }
    const char *colon = memchr(text, ':', len);
    if (colon) host_end = colon, port = colon + 1;
  }
  if (http_host_parse(text, (size_t)(host_end - text), out, why) < 0) return -1;
  size_t port_len = port ? (size_t)(text + len - port) : 0;
  if (port && port_len) {
    out->port = parse_port(port, port_len);
    if (out->port < 0) return refuse(why, "a port that is not a number from 1 to 65535");
  } else if (default_port) {
    out->port = default_port;
  } else {
    return refuse(why, "no port (host:port)");
  }
  return 0;
}

/* ---- where a head ends ---- */

static long ended_at(size_t end) { return end > HTTP_HEAD_MAX ? -1 : (long)end; }

long http_head_end(const char *data, size_t n, size_t *scanned) {
  /* a head that ends by HTTP_HEAD_MAX has its last LF before it */
  size_t limit = n < HTTP_HEAD_MAX ? n : HTTP_HEAD_MAX;
  size_t i = *scanned;
  while (i < limit) {
    const char *lf = memchr(data + i, '\n', limit - i);
    if (!lf) break;
    size_t j = (size_t)(lf - data);
    if (j + 1 >= n || (data[j + 1] == '\r' && j + 2 >= n)) { /* the next bytes decide: look again from j */
      *scanned = j;
      return 0;
    }
    if (data[j + 1] == '\n') return ended_at(j + 2);
    if (data[j + 1] == '\r' && data[j + 2] == '\n') return ended_at(j + 3);
    i = j + 1;
  }
  *scanned = limit;
  return n >= HTTP_HEAD_MAX ? -1 : 0;
}

/* ---- lines and fields ---- */

typedef struct cursor {
  char *p, *end;
} cursor;

/* The next line, CRLF-terminated; NUL-terminated in place. NULL (with *why)
 * when a line ends in a bare LF or holds a bare CR. */
static char *next_line(cursor *c, size_t *len, const char **why) {
  char *lf = memchr(c->p, '\n', (size_t)(c->end - c->p));
  if (!lf || lf == c->p || lf[-1] != '\r') {
    refuse(why, "a line that does not end in CRLF (a bare LF)");
    return NULL;
  }
  char *line = c->p;
  *len = (size_t)(lf - 1 - line);
  if (memchr(line, '\r', *len)) {
    refuse(why, "a bare CR inside a line");
    return NULL;
  }
  line[*len] = '\0';
  c->p = lf + 1;
  return line;
}

static int parse_field(char *line, size_t len, http_field *f, const char **why) {
  if (line[0] == ' ' || line[0] == '\t') return refuse(why, "a folded header line (obs-fold)");
  char *colon = memchr(line, ':', len);
  if (!colon) return refuse(why, "a header line without ':'");
  size_t name_len = (size_t)(colon - line);
  if (!http_is_token(line, name_len)) return refuse(why, "a header name that is not a token (a space before ':'?)");
  char *v = colon + 1, *end = line + len;
  for (char *p = v; p < end; p++)
    if (!is_field_byte((unsigned char)*p)) return refuse(why, *p ? "a control byte in a header value"
                                                                : "a NUL byte in a header value");
  while (v < end && (*v == ' ' || *v == '\t')) v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
  *colon = '\0';
  *end = '\0';
  f->name = line, f->name_len = name_len;
  f->value = v, f->value_len = (size_t)(end - v);
  return 0;
}

/* The fields up to the blank line. 0, -1 (why), -2 too many. */
static int parse_fields(cursor *c, http_message *m, const char **why) {
  for (;;) {
    size_t len;
    char *line = next_line(c, &len, why);
    if (!line) return -1;
    if (len == 0) return c->p == c->end ? 0 : refuse(why, "bytes after the head's blank line");
    if (m->nfields == HTTP_FIELDS_MAX) return refuse(why, "more than 128 header fields"), -2;
    if (parse_field(line, len, &m->fields[m->nfields], why) < 0) return -1;
    m->nfields++;
  }
}

static int name_is(const http_field *f, const char *name) {
  size_t n = strlen(name);
  if (f->name_len != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower((unsigned char)f->name[i]) != (unsigned char)name[i]) return 0;
  return 1;
}

const char *http_field_value(const http_message *m, const char *name, int *count) {
  const char *found = NULL;
  int n = 0;
  for (size_t i = 0; i < m->nfields; i++)
    if (name_is(&m->fields[i], name)) {
      if (!found) found = m->fields[i].value;
      n++;
    }
  if (count) *count = n;
  return found;
}

/* ---- framing (RFC 9112 6) ---- */

static int is_all_digits(const char *s, size_t n) {
  if (n == 0 || n > 15) return 0; /* below 10^15: more than any body sent here */
  for (size_t i = 0; i < n; i++)
    if (!is_digit((unsigned char)s[i])) return 0;
  return 1;
}

/* Every Content-Length field the same 1*DIGIT: *length. 0 none, 1 one, -1 not. */
static int content_length(const http_message *m, unsigned long long *length, const char **why) {
  int seen = 0;
  for (size_t i = 0; i < m->nfields; i++) {
    const http_field *f = &m->fields[i];
    if (!name_is(f, "content-length")) continue;
    if (!is_all_digits(f->value, f->value_len)) return refuse(why, "a Content-Length that is not one number");
    unsigned long long v = strtoull(f->value, NULL, 10);
    if (seen && v != *length) return refuse(why, "two Content-Length values");
    *length = v, seen = 1;
  }
  return seen;
}

/* Is s[0..n) the word, ASCII case aside? */
static int word_is(const char *s, size_t n, const char *word) {
  if (n != strlen(word)) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower((unsigned char)s[i]) != (unsigned char)word[i]) return 0;
  return 1;
}

/* The transfer codings of every Transfer-Encoding field, in order: 0 when
 * there is no field, 1 when the list is "chunked" alone, -1 otherwise;
 * *chunked_last says whether chunked is the final coding. */
static int transfer_encoding(const http_message *m, int *chunked_last) {
  int seen = 0, codings = 0;
  *chunked_last = 0;
  for (size_t i = 0; i < m->nfields; i++) {
    const http_field *f = &m->fields[i];
    if (!name_is(f, "transfer-encoding")) continue;
    seen = 1;
    const char *p = f->value, *end = f->value + f->value_len;
    for (;;) {
      const char *comma = memchr(p, ',', (size_t)(end - p));
      const char *a = p, *b = comma ? comma : end;
      while (a < b && (*a == ' ' || *a == '\t')) a++;
      while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
      if (b > a) codings++, *chunked_last = word_is(a, (size_t)(b - a), "chunked");
      if (!comma) break;
      p = comma + 1;
    }
  }
  if (!seen) return 0;
  return codings == 1 && *chunked_last ? 1 : -1;
}

static int request_framing(http_message *m, int *status, const char **why) {
  int chunked_last;
  int te = transfer_encoding(m, &chunked_last);
  int cl = content_length(m, &m->length, why);
  *status = 400;
  if (cl < 0) return -1;
  if (te && cl) return refuse(why, "both Content-Length and Transfer-Encoding (a request smuggling shape)");
  if (te && m->minor == 0) return refuse(why, "Transfer-Encoding in an HTTP/1.0 request");
  if (te < 0) {
    *status = 501;
    return refuse(why, "a Transfer-Encoding other than chunked alone");
  }
  m->body = te ? HTTP_BODY_CHUNKED : cl ? HTTP_BODY_LENGTH : HTTP_BODY_NONE;
  return 0;
}

static int host_field(http_message *m, int default_port, const char **why) {
  int count;
  const char *value = http_field_value(m, "host", &count);
  if (count > 1) return refuse(why, "two Host headers");
  if (!value) return 0;
  if (http_authority_parse(value, strlen(value), default_port, &m->host, why) < 0) return -1;
  m->has_host = 1;
  return 0;
}

/* ---- requests ---- */

static int parse_version(const char *v, int *minor) {
  if (strcmp(v, "HTTP/1.1") == 0) return *minor = 1, 0;
  if (strcmp(v, "HTTP/1.0") == 0) return *minor = 0, 0;
  return -1;
}

/* The target's bytes: visible ASCII only (RFC 9112 3.2: no space, no control, no NUL). */
static int visible_ascii(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f) return 0;
  return 1;
}

static int absolute_target(http_message *m, char *target, const char **why) {
  char *sep = strstr(target, "://");
  if (!sep) return refuse(why, "a proxy request names its target in full (http://host/path)");
  *sep = '\0';
  if (!http_is_token(target, strlen(target)) || !is_alpha((unsigned char)target[0]))
    return refuse(why, "not a URL scheme before '://'");
  if (!word_is(target, strlen(target), "http"))
    return refuse(why, word_is(target, strlen(target), "https")
                           ? "https:// through the proxy: use CONNECT (HTTPS_PROXY) for it"
                           : "a scheme other than http:// (HTTPS goes through CONNECT)");
  char *authority = sep + 3;
  size_t alen = strcspn(authority, "/?#");
  if (authority[alen] == '#') return refuse(why, "a fragment (#) in the request target");
  if (strchr(authority + alen, '#')) return refuse(why, "a fragment (#) in the request target");
  char *rest = authority + alen;
  if (http_authority_parse(authority, alen, 80, &m->target_host, why) < 0) return -1;
  if (*rest == '/') {
    m->path = rest;
  } else { /* "" or "?query": the path is "/" */
    memmove(authority + 1, rest, strlen(rest) + 1);
    authority[0] = '/';
    m->path = authority;
  }
  m->form = HTTP_ABSOLUTE_FORM;
  return 0;
}

static int request_target(http_message *m, char *target, int kind, const char **why) {
  if (!visible_ascii(target)) return refuse(why, "a space, control or non-ASCII byte in the request target");
  if (kind == HTTP_ORIGIN_REQUEST) {
    if (target[0] != '/') return refuse(why, "the request inside the tunnel must be in origin form (GET /path)");
    if (strchr(target, '#')) return refuse(why, "a fragment (#) in the request target");
    m->form = HTTP_ORIGIN_FORM, m->path = target;
    return 0;
  }
  if (strcmp(m->method, "CONNECT") == 0) {
    m->form = HTTP_AUTHORITY_FORM;
    return http_authority_parse(target, strlen(target), 0, &m->target_host, why);
  }
  return absolute_target(m, target, why);
}

static int request_line(http_message *m, char *line, size_t len, int kind, const char **why) {
  char *sp1 = memchr(line, ' ', len);
  if (!sp1) return refuse(why, "not an HTTP request line (METHOD target HTTP/1.1)");
  char *sp2 = memchr(sp1 + 1, ' ', (size_t)(line + len - sp1 - 1));
  if (!sp2 || memchr(sp2 + 1, ' ', (size_t)(line + len - sp2 - 1)))
    return refuse(why, "not an HTTP request line (METHOD target HTTP/1.1)");
  size_t mlen = (size_t)(sp1 - line);
  if (!http_is_token(line, mlen) || mlen >= sizeof m->method) return refuse(why, "a method that is not a token");
  memcpy(m->method, line, mlen);
  m->method[mlen] = '\0';
  *sp1 = *sp2 = '\0';
  if (parse_version(sp2 + 1, &m->minor) < 0) return refuse(why, "an HTTP version other than HTTP/1.0 or HTTP/1.1");
  return request_target(m, sp1 + 1, kind, why);
}

static int start(http_message *m, const char *head, size_t len, cursor *c, const char **why) {
  memset(m, 0, sizeof *m);
  if (len > HTTP_HEAD_MAX) return refuse(why, "a head longer than 64 KiB");
  const char *nul = memchr(head, '\0', len);
  if (nul) { /* a NUL ends a C string: nothing below may meet one */
    const char *first_lf = memchr(head, '\n', len);
    return refuse(why, first_lf && nul > first_lf ? "a NUL byte in a header" : "a NUL byte in the first line");
  }
  m->storage = malloc(len + 1);
  if (!m->storage) return refuse(why, "out of memory");
  memcpy(m->storage, head, len);
  m->storage[len] = '\0';
  c->p = m->storage, c->end = m->storage + len;
  return 0;
}

int http_request_parse(const char *head, size_t len, int kind, http_message *m, int *status, const char **why) {
  cursor c;
  *status = len > HTTP_HEAD_MAX ? 431 : 400;
  if (start(m, head, len, &c, why) < 0) return -1;
  size_t line_len;
  char *line = next_line(&c, &line_len, why);
  if (!line || request_line(m, line, line_len, kind, why) < 0) return -1;
  int rc = parse_fields(&c, m, why);
  if (rc < 0) return *status = rc == -2 ? 431 : 400, -1;
  if (host_field(m, m->form == HTTP_ORIGIN_FORM ? 443 : 80, why) < 0) return -1;
  /* CONNECT names its authority in the target; clients differ on whether a Host goes with it */
  if (m->form == HTTP_AUTHORITY_FORM) return m->body = HTTP_BODY_NONE, 0;
  if (!m->has_host && m->minor == 1) return refuse(why, "an HTTP/1.1 request without a Host header");
  return request_framing(m, status, why);
}

/* ---- responses ---- */

static int status_line(http_message *m, char *line, size_t len, const char **why) {
  if (len < 12 || strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
      !is_digit((unsigned char)line[9]) || !is_digit((unsigned char)line[10]) || !is_digit((unsigned char)line[11]) ||
      (len > 12 && line[12] != ' '))
    return refuse(why, "not an HTTP/1.x status line");
  m->minor = line[7] - '0';
  m->status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (m->status < 100) return refuse(why, "a status below 100");
  for (size_t i = 13; i < len; i++)
    if (!is_field_byte((unsigned char)line[i])) return refuse(why, "a control byte in the status line");
  m->reason = len > 12 ? line + 13 : "";
  return 0;
}

static int response_framing(http_message *m, const char *request_method, const char **why) {
  if (strcmp(request_method, "HEAD") == 0 || m->status < 200 || m->status == 204 || m->status == 304) {
    m->body = HTTP_BODY_NONE;
    return 0;
  }
  int chunked_last;
  int te = transfer_encoding(m, &chunked_last);
  if (te) { /* RFC 9112 6.3: Transfer-Encoding overrides Content-Length */
    m->body = chunked_last ? HTTP_BODY_CHUNKED : HTTP_BODY_CLOSE;
    return 0;
  }
  int cl = content_length(m, &m->length, why);
  if (cl < 0) return -1;
  m->body = cl ? HTTP_BODY_LENGTH : HTTP_BODY_CLOSE;
  return 0;
}

int http_response_parse(const char *head, size_t len, const char *request_method, http_message *m,
                        const char **why) {
  cursor c;
  if (start(m, head, len, &c, why) < 0) return -1;
  size_t line_len;
  char *line = next_line(&c, &line_len, why);
  if (!line || status_line(m, line, line_len, why) < 0) return -1;
  if (parse_fields(&c, m, why) < 0) return -1;
  return response_framing(m, request_method, why);
}

void http_message_free(http_message *m) {
  free(m->storage);
  m->storage = NULL;
}

/* ---- refusals ---- */

static const char *status_words(int status) {
  switch (status) {
  case 400: return "Bad Request";
  case 403: return "Forbidden";
  case 431: return "Request Header Fields Too Large";
  case 501: return "Not Implemented";
  case 502: return "Bad Gateway";
  default: return "Error";
  }
}

void http_refusal(buf *out, int status, const char *reason) {
  buf body = BUF_INIT;
  buf_append_str(&body, "luagent: ");
  for (const char *p = reason; *p; p++) buf_append_char(&body, *p == '\r' || *p == '\n' ? ' ' : *p);
  buf_append_char(&body, '\n');
  buf_printf(out,
             "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
             "Connection: close\r\nX-Luagent-Refused: %d\r\n\r\n",
             status, status_words(status), body.len, status);
  buf_append(out, body.data, body.len);
  buf_free(&body);
}

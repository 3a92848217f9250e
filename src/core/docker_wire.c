/* docker_wire: endpoint resolution and the capped exec stream (see docker_wire.h). */
#include "docker_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SOCKET "/var/run/docker.sock"

static int copy_path(char *dst, size_t dstlen, const char *dir, const char *file) {
  int n = snprintf(dst, dstlen, "%s/%s", dir, file);
  return n < 0 || (size_t)n >= dstlen ? -1 : 0;
}

static int parse_unix(const char *path, docker_endpoint *out, char *err, size_t errlen) {
  if (!*path || strlen(path) >= sizeof out->unix_socket) {
    snprintf(err, errlen, "DOCKER_HOST has an empty or too long socket path");
    return -1;
  }
  snprintf(out->unix_socket, sizeof out->unix_socket, "%s", path);
  snprintf(out->base_url, sizeof out->base_url, "http://localhost");
  snprintf(out->description, sizeof out->description, "unix://%s", path);
  return 0;
}

static int parse_tcp(const char *hostport, const char *tls_verify, const char *cert_path,
                     const char *home, docker_endpoint *out, char *err, size_t errlen) {
  size_t len = strcspn(hostport, "/");
  if (len == 0 || len > 255) {
    snprintf(err, errlen, "DOCKER_HOST tcp:// needs host:port, e.g. tcp://127.0.0.1:2376");
    return -1;
  }
  out->tls = tls_verify && *tls_verify && strcmp(tls_verify, "0") != 0;
  out->tls_verify = out->tls;
  snprintf(out->base_url, sizeof out->base_url, "%s://%.*s", out->tls ? "https" : "http", (int)len, hostport);
  snprintf(out->description, sizeof out->description, "tcp://%.*s", (int)len, hostport);
  if (!out->tls) return 0;
  char dir[PATH_MAX];
  if (cert_path && *cert_path)
    snprintf(dir, sizeof dir, "%s", cert_path);
  else
    snprintf(dir, sizeof dir, "%s/.docker", home ? home : "");
  if (copy_path(out->ca_file, sizeof out->ca_file, dir, "ca.pem") ||
      copy_path(out->cert_file, sizeof out->cert_file, dir, "cert.pem") ||
      copy_path(out->key_file, sizeof out->key_file, dir, "key.pem")) {
    snprintf(err, errlen, "DOCKER_CERT_PATH is too long");
    return -1;
  }
  return 0;
}

int docker_endpoint_parse(const char *docker_host, const char *tls_verify, const char *cert_path,
                          const char *home, docker_endpoint *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!docker_host || !*docker_host) return parse_unix(DEFAULT_SOCKET, out, err, errlen);
  if (strncmp(docker_host, "unix://", 7) == 0) return parse_unix(docker_host + 7, out, err, errlen);
  if (strncmp(docker_host, "tcp://", 6) == 0)
    return parse_tcp(docker_host + 6, tls_verify, cert_path, home, out, err, errlen);
  snprintf(err, errlen,
           "DOCKER_HOST=%s is not supported: use unix:///path/to/docker.sock or tcp://host:port",
           docker_host);
  return -1;
}

/* ---- the exec stream ---- */

void docker_demux_init(docker_demux *d) { memset(d, 0, sizeof *d); }

int docker_demux_feed(docker_demux *d, const char *data, size_t n, docker_frame_fn fn, void *ctx) {
  while (n > 0) {
    if (d->remaining == 0) {
      size_t take = 8 - d->header_len < n ? 8 - d->header_len : n;
      memcpy(d->header + d->header_len, data, take);
      d->header_len += take, data += take, n -= take;
      if (d->header_len < 8) return 0;
      d->header_len = 0;
      if (d->header[0] > 3 || d->header[1] || d->header[2] || d->header[3]) return -1;
      d->stream = d->header[0] == DOCKER_STDOUT ? DOCKER_STDOUT : DOCKER_STDERR;
      d->remaining = (size_t)d->header[4] << 24 | (size_t)d->header[5] << 16 | (size_t)d->header[6] << 8 |
                     d->header[7];
      continue;
    }
    size_t take = d->remaining < n ? d->remaining : n;
    if (fn(ctx, d->stream, data, take) != 0) return -1;
    d->remaining -= take, data += take, n -= take;
  }
  return 0;
}

int docker_demux_partial(const docker_demux *d) { return d->remaining > 0 || d->header_len > 0; }

void docker_capture_init(docker_capture *c, size_t cap_per_stream) {
  memset(c, 0, sizeof *c);
  docker_demux_init(&c->demux);
  capped_init(&c->out[DOCKER_STDOUT], cap_per_stream);
  capped_init(&c->out[DOCKER_STDERR], cap_per_stream);
}

int docker_capture_frame(void *ctx, int stream, const char *data, size_t n) {
  docker_capture *c = ctx;
  return capped_write(&c->out[stream], data, n);
}

int docker_capture_feed(docker_capture *c, const char *data, size_t n) {
  return docker_demux_feed(&c->demux, data, n, docker_capture_frame, c);
}

void docker_capture_free(docker_capture *c) {
  capped_free(&c->out[DOCKER_STDOUT]);
  capped_free(&c->out[DOCKER_STDERR]);
}

/* ---- the engine's message in an error body ---- */

/* A cursor over a JSON text; every scan_* returns 0, or -1 when the text is
 * not what it should be. */
typedef struct json_cursor {
  const char *p, *end;
} json_cursor;

static void skip_space(json_cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(const char *p, const char *end, unsigned *out) {
  if (end - p < 4) return -1;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char ch = p[i];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v << 4 | (unsigned)d;
  }
  *out = v;
  return 0;
}

static int put_utf8(buf *out, unsigned cp) {
  char b[4];
  size_t n;
  if (cp < 0x80) {
    b[0] = (char)cp, n = 1;
  } else if (cp < 0x800) {
    b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  } else if (cp < 0x10000) {
    b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 0x3F)), b[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  } else {
    b[0] = (char)(0xF0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  }
  return buf_append(out, b, n);
}

/* \uXXXX at c->p (past the backslash and 'u'), with a following low
 * surrogate when this is a high one; a lone surrogate becomes U+FFFD. */
static int scan_unicode_escape(json_cursor *c, buf *out) {
  unsigned cp, low;
  if (hex4(c->p, c->end, &cp) != 0) return -1;
  c->p += 4;
  if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' &&
      hex4(c->p + 2, c->end, &low) == 0 && low >= 0xDC00 && low < 0xE000) {
    c->p += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  } else if (cp >= 0xD800 && cp < 0xE000) {
    cp = 0xFFFD;
  }
  return out ? put_utf8(out, cp) : 0;
}

/* A JSON string at c->p (its opening quote); decoded into out unless out is NULL. */
static int scan_string(json_cursor *c, buf *out) {
  if (c->p >= c->end || *c->p != '"') return -1;
  c->p++;
  while (c->p < c->end) {
    char ch = *c->p++;
    if (ch == '"') return 0;
    if ((unsigned char)ch < 0x20) return -1;
    if (ch != '\\') {
      if (out && buf_append_char(out, ch) != 0) return -1;
      continue;
    }
    if (c->p >= c->end) return -1;
    char e = *c->p++;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = e ? strchr(from, e) : NULL;
    if (hit) {
      if (out && buf_append_char(out, to[hit - from]) != 0) return -1;
    } else if (e != 'u' || scan_unicode_escape(c, out) != 0) {
      return -1;
    }
  }
  return -1;
}

/* Any JSON value, not kept: strings, numbers, literals, and nested
 * objects and arrays (their strings scanned, so brackets in them count not). */
static int skip_value(json_cursor *c) {
  int depth = 0;
  do {
    skip_space(c);
    if (c->p >= c->end) return -1;
    char ch = *c->p;
    if (ch == '"') {
      if (scan_string(c, NULL) != 0) return -1;
    } else if (ch == '{' || ch == '[') {
      depth++, c->p++;
    } else if (ch == '}' || ch == ']') {
      if (depth == 0) return -1;
      depth--, c->p++;
    } else if (ch == ',' || ch == ':') {
      if (depth == 0) return -1;
      c->p++;
    } else if (strchr("-0123456789tfn", ch)) {
      while (c->p < c->end && strchr("+-.0123456789eEtruefalsn", *c->p)) c->p++;
    } else {
      return -1;
    }
  } while (depth > 0);
  return 0;
}

/* The top-level "message" string of a JSON object (the last one, as a JSON
 * decoder keeps it). Returns 1 found, 0 a valid object without one, -1 not
 * a JSON object. */
static int json_top_message(const char *body, size_t len, buf *out) {
  json_cursor c = {body, body + len};
  skip_space(&c);
  if (c.p >= c.end || *c.p++ != '{') return -1;
  skip_space(&c);
  if (c.p < c.end && *c.p == '}') return 0;
  int found = 0;
  buf key = BUF_INIT, value = BUF_INIT;
  for (;;) {
    skip_space(&c);
    buf_clear(&key);
    if (scan_string(&c, &key) != 0) break;
    skip_space(&c);
    if (c.p >= c.end || *c.p++ != ':') break;
    skip_space(&c);
    int is_message = key.len == 7 && memcmp(key.data, "message", 7) == 0;
    if (is_message && c.p < c.end && *c.p == '"') {
      buf_clear(&value);
      if (scan_string(&c, &value) != 0) break;
      found = 1;
    } else if (skip_value(&c) != 0) {
      break;
    }
    skip_space(&c);
    if (c.p < c.end && *c.p == ',') {
      c.p++;
      continue;
    }
    if (c.p < c.end && *c.p == '}') {
      c.p++;
      skip_space(&c);
      if (c.p != c.end) break; /* text after the object */
      if (found && buf_append(out, value.data ? value.data : "", value.len) != 0) found = -1;
      buf_free(&key);
      buf_free(&value);
      return found;
    }
    break;
  }
  buf_free(&key);
  buf_free(&value);
  return -1;
}

int docker_error_message(const char *body, size_t len, buf *out) {
  if (!body) body = "", len = 0;
  buf message = BUF_INIT;
  int from_json = json_top_message(body, len, &message);
  if (from_json == 1) {
    int rc = buf_append(out, message.data ? message.data : "", message.len);
    buf_free(&message);
    return rc == 0 ? 1 : -1;
  }
  buf_free(&message);
  const char *nl = memchr(body, '\n', len);
  size_t n = nl ? (size_t)(nl - body) : len;
  while (n > 0 && (body[n - 1] == ' ' || body[n - 1] == '\t' || body[n - 1] == '\r')) n--;
  return buf_append(out, body, n) == 0 ? 0 : -1;
}

/* tar: a streaming ustar/PAX writer, an incremental reader and a safe
 * extractor (see tar.h). Memory stays flat: file data moves in the caller's
 * chunks, only headers and metadata records are ever buffered. */
#include "tar.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fs.h"

#define BLOCK 512
#define END_BLOCKS (2 * BLOCK)
#define META_MAX (1 << 20) /* largest PAX / GNU long-name record we buffer */

static const char zero_block[BLOCK];

static long long padding_of(long long size) { return (BLOCK - size % BLOCK) % BLOCK; }

/* Makes room for one more item: returns the (maybe moved) array, or NULL
 * when out of memory (the old array is then untouched). */
static void *grow_array(void *items, size_t *cap, size_t count, size_t size) {
  if (count < *cap) return items;
  size_t n = *cap ? *cap * 2 : 16;
  void *bigger = realloc(items, n * size);
  if (bigger) *cap = n;
  return bigger;
}

/* ===================== name map: a small string hash set ===================== */

/* Maps names to a one-character kind ('d', 'f', 'o'); 0 means absent. */
typedef struct name_map {
  char **keys;
  char *kinds;
  size_t cap, count; /* cap is 0 or a power of two */
} name_map;

static size_t hash_name(const char *s) {
  size_t h = 1469598103934665603ULL & (size_t)-1;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static size_t map_slot(char **keys, size_t cap, const char *key) {
  size_t i = hash_name(key) & (cap - 1);
  while (keys[i] && strcmp(keys[i], key) != 0) i = (i + 1) & (cap - 1);
  return i;
}

static char map_get(const name_map *m, const char *key) {
  if (m->cap == 0) return 0;
  size_t i = map_slot(m->keys, m->cap, key);
  return m->keys[i] ? m->kinds[i] : 0;
}

static int map_grow(name_map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  char **keys = calloc(cap, sizeof *keys);
  char *kinds = calloc(cap, 1);
  if (!keys || !kinds) {
    free(keys);
    free(kinds);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = map_slot(keys, cap, m->keys[i]);
    keys[j] = m->keys[i];
    kinds[j] = m->kinds[i];
  }
  free(m->keys);
  free(m->kinds);
  m->keys = keys;
  m->kinds = kinds;
  m->cap = cap;
  return 0;
}

static int map_put(name_map *m, const char *key, char kind) {
  if ((m->count + 1) * 4 > m->cap * 3 && map_grow(m) != 0) return -1;
  size_t i = map_slot(m->keys, m->cap, key);
  if (!m->keys[i]) {
    if (!(m->keys[i] = strdup(key))) return -1;
    m->count++;
  }
  m->kinds[i] = kind;
  return 0;
}

static void map_free(name_map *m) {
  for (size_t i = 0; i < m->cap; i++) free(m->keys[i]);
  free(m->keys);
  free(m->kinds);
  memset(m, 0, sizeof *m);
}

/* ===================== header fields ===================== */

/* Header field offsets and widths (POSIX ustar). */
enum {
  H_NAME = 0, H_MODE = 100, H_UID = 108, H_GID = 116, H_SIZE = 124, H_MTIME = 136,
  H_CHKSUM = 148, H_TYPE = 156, H_LINK = 157, H_MAGIC = 257, H_VERSION = 263,
  H_DEVMAJOR = 329, H_DEVMINOR = 337, H_PREFIX = 345
};
#define NAME_LEN 100
#define PREFIX_LEN 155

/* Writes v as zero-padded octal digits and a NUL filling the field, or in
 * base-256 (the GNU extension) when it does not fit. */
static void put_number(char *field, size_t width, unsigned long long v) {
  if (v < (1ULL << (3 * (width - 1)))) {
    field[width - 1] = '\0';
    for (size_t i = width - 1; i-- > 0; v >>= 3) field[i] = (char)('0' + (v & 7));
    return;
  }
  for (size_t i = width - 1; i >= 1; i--, v >>= 8) field[i] = (char)(v & 0xff);
  field[0] = (char)0x80;
}

/* Copies up to width bytes of s; a shorter string keeps the NUL padding. */
static void put_string(char *field, size_t width, const char *s, size_t len) {
  memcpy(field, s, len < width ? len : width);
}

static unsigned long header_sum(const unsigned char *h, long *signed_sum) {
  unsigned long sum = 0;
  long ssum = 0;
  for (size_t i = 0; i < BLOCK; i++) {
    unsigned char c = i >= H_CHKSUM && i < H_CHKSUM + 8 ? ' ' : h[i];
    sum += c;
    ssum += (signed char)c;
  }
  if (signed_sum) *signed_sum = ssum;
  return sum;
}

static void put_checksum(char *h) {
  unsigned long sum = header_sum((const unsigned char *)h, NULL);
  put_number(h + H_CHKSUM, 7, sum); /* six digits and a NUL ... */
  h[H_CHKSUM + 7] = ' ';            /* ... then a space, as tar does */
}

/* Reads an octal field, which may be padded with spaces and NULs. */
static int parse_octal(const unsigned char *f, size_t w, long long *out) {
  size_t start = 0, end = w;
  while (start < end && (f[start] == ' ' || f[start] == '\0')) start++;
  while (end > start && (f[end - 1] == ' ' || f[end - 1] == '\0')) end--;
  long long v = 0;
  for (size_t i = start; i < end; i++) {
    if (f[i] < '0' || f[i] > '7' || v > (LLONG_MAX >> 3)) return -1;
    v = v * 8 + (f[i] - '0');
  }
  *out = v;
  return 0;
}

/* Reads a base-256 field (first byte 0x80 positive, 0xff negative). */
static int parse_base256(const unsigned char *f, size_t w, long long *out) {
  unsigned char inv = (f[0] & 0x40) ? 0xff : 0;
  unsigned long long x = 0;
  for (size_t i = 0; i < w; i++) {
    unsigned char c = f[i] ^ inv;
    if (i == 0) c &= 0x7f;
    if (x >> 55) return -1;
    x = x << 8 | c;
  }
  if (x >> 63) return -1;
  *out = inv ? ~(long long)x : (long long)x;
  return 0;
}

static int parse_number(const unsigned char *f, size_t w, long long *out) {
  return (f[0] & 0x80) ? parse_base256(f, w, out) : parse_octal(f, w, out);
}

/* ===================== writer ===================== */

typedef struct wentry {
  buf header;      /* the header block(s), a PAX header included */
  long long size;  /* data bytes after the header */
  char *data;      /* add_data's copy, or NULL */
  char *host_path; /* add_file's source, or NULL */
  char *name;      /* for error messages */
} wentry;

struct tar_writer {
  unsigned uid, gid;
  wentry *entries;
  size_t count, cap;
  name_map names;   /* every name added: 'd' directory, 'f' anything else */
  long long total;  /* stream length without the end blocks */
  int started;      /* the first read happened: no more adds */
  int failed;
  size_t cur;       /* entry being streamed */
  long long pos;    /* offset inside it: header, data, padding */
  int fd;           /* the current entry's open file, or -1 */
  long long trailer_pos;
  char err[1024];
};

tar_writer *tar_writer_new(unsigned uid, unsigned gid) {
  tar_writer *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->uid = uid;
  w->gid = gid;
  w->fd = -1;
  return w;
}

static int add_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int add_error(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Why an archive name is not acceptable, or NULL. */
static const char *name_problem(const char *name, size_t len) {
  if (len == 0) return "empty name";
  if (name[0] == '/') return "absolute path";
  for (size_t i = 0; i < len;) {
    size_t n = 0;
    while (i + n < len && name[i + n] != '/') n++;
    if (n == 0) return "empty component";
    if (n == 1 && name[i] == '.') return "'.' component";
    if (n == 2 && name[i] == '.' && name[i + 1] == '.') return "'..' component";
    i += n + 1;
  }
  return NULL;
}

/* Copies name without its trailing "/" into out after checking it. */
static int clean_name(const char *name, buf *out, char *err, size_t errlen) {
  size_t len = strlen(name);
  if (len > 1 && name[len - 1] == '/') len--;
  const char *why = name_problem(name, len);
  if (why) return add_error(err, errlen, "bad entry name '%s': %s", name, why);
  if (buf_append(out, name, len) != 0) return add_error(err, errlen, "out of memory adding '%s'", name);
  return 0;
}

/* Where to cut name into ustar prefix and name: 0 when it fits whole, the
 * position of the cutting "/", or -1 when no cut fits. */
static long ustar_cut(const char *name, size_t len) {
  if (len <= NAME_LEN) return 0;
  size_t first = len - NAME_LEN - 1;
  for (size_t i = first; i <= PREFIX_LEN && i + 1 < len; i++)
    if (name[i] == '/') return (long)i;
  return -1;
}

static size_t decimal_digits(size_t n) {
  size_t d = 1;
  while (n >= 10) n /= 10, d++;
  return d;
}

/* Appends one PAX record "LEN key=value\n"; LEN counts itself. */
static int pax_record(buf *b, const char *key, const char *value) {
  size_t base = strlen(key) + strlen(value) + 3, len = base + decimal_digits(base);
  while (base + decimal_digits(len) != len) len = base + decimal_digits(len);
  return buf_printf(b, "%zu %s=%s\n", len, key, value);
}

typedef struct header_spec {
  const char *name;
  const char *link;
  char type;
  unsigned mode;
  long long size;
  long long mtime;
} header_spec;

static int append_block(const tar_writer *w, buf *out, const header_spec *s) {
  char h[BLOCK] = {0};
  size_t len = strlen(s->name);
  long cut = ustar_cut(s->name, len);
  if (cut > 0) {
    put_string(h + H_PREFIX, PREFIX_LEN, s->name, (size_t)cut);
    put_string(h + H_NAME, NAME_LEN, s->name + cut + 1, len - (size_t)cut - 1);
  } else {
    put_string(h + H_NAME, NAME_LEN, s->name, len); /* cut < 0: the PAX path has it all */
  }
  put_number(h + H_MODE, 8, s->mode & 07777);
  put_number(h + H_UID, 8, w->uid);
  put_number(h + H_GID, 8, w->gid);
  put_number(h + H_SIZE, 12, (unsigned long long)s->size);
  put_number(h + H_MTIME, 12, s->mtime > 0 ? (unsigned long long)s->mtime : 0);
  h[H_TYPE] = s->type;
  put_string(h + H_LINK, NAME_LEN, s->link, strlen(s->link));
  memcpy(h + H_MAGIC, "ustar", 6);
  memcpy(h + H_VERSION, "00", 2);
  put_number(h + H_DEVMAJOR, 8, 0);
  put_number(h + H_DEVMINOR, 8, 0);
  put_checksum(h);
  return buf_append(out, h, BLOCK);
}

/* A PAX 'x' header carrying records, then its padded data. */
static int append_pax(const tar_writer *w, buf *out, const header_spec *s, const buf *records) {
  buf name = BUF_INIT;
  int rc = buf_printf(&name, "PaxHeaders/%s", s->name);
  if (rc == 0 && name.len > NAME_LEN) name.data[NAME_LEN] = '\0';
  header_spec pax = {name.data, "", 'x', 0644, (long long)records->len, s->mtime};
  if (rc == 0) rc = append_block(w, out, &pax);
  if (rc == 0) rc = buf_append(out, records->data, records->len);
  if (rc == 0) rc = buf_append(out, zero_block, (size_t)padding_of((long long)records->len));
  buf_free(&name);
  return rc;
}

/* The header block(s) of an entry: PAX first when the name or link target
 * does not fit ustar. */
static int build_headers(const tar_writer *w, buf *out, const header_spec *s) {
  buf records = BUF_INIT;
  int rc = 0;
  if (ustar_cut(s->name, strlen(s->name)) < 0) rc = pax_record(&records, "path", s->name);
  if (rc == 0 && strlen(s->link) > NAME_LEN) rc = pax_record(&records, "linkpath", s->link);
  if (rc == 0 && records.len > 0) rc = append_pax(w, out, s, &records);
  if (rc == 0) rc = append_block(w, out, s);
  buf_free(&records);
  return rc;
}

static void free_entry(wentry *e) {
  buf_free(&e->header);
  free(e->data);
  free(e->host_path);
  free(e->name);
}

/* Appends an entry; takes ownership of data and host_path (also on error). */
static int push_entry(tar_writer *w, const header_spec *s, char *data, char *host_path) {
  wentry e = {BUF_INIT, s->type == '0' ? s->size : 0, data, host_path, strdup(s->name)};
  int ok = e.name != NULL && build_headers(w, &e.header, s) == 0;
  if (ok) {
    wentry *grown = grow_array(w->entries, &w->cap, w->count, sizeof *grown);
    if (grown) w->entries = grown;
    ok = grown != NULL;
  }
  if (!ok) {
    free_entry(&e);
    return -1;
  }
  w->entries[w->count++] = e;
  w->total += (long long)e.header.len + e.size + padding_of(e.size);
  return 0;
}

static int push_dir(tar_writer *w, const char *name, unsigned mode, long long mtime) {
  buf slashed = BUF_INIT;
  int rc = buf_printf(&slashed, "%s/", name);
  header_spec s = {slashed.data, "", '5', mode, 0, mtime};
  if (rc == 0) rc = push_entry(w, &s, NULL, NULL);
  if (rc == 0) rc = map_put(&w->names, name, 'd');
  buf_free(&slashed);
  return rc;
}

/* Adds every missing parent directory of name (mode 0755), once each. */
static int add_parents(tar_writer *w, char *name, const char *entry, char *err, size_t errlen) {
  for (char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
    *p = '\0';
    char kind = map_get(&w->names, name);
    int rc = 0;
    if (kind == 'f')
      rc = add_error(err, errlen, "cannot add '%s': '%s' was added as a non-directory", entry, name);
    if (kind == 0 && push_dir(w, name, 0755, (long long)time(NULL)) != 0)
      rc = add_error(err, errlen, "out of memory adding '%s'", name);
    *p = '/';
    if (rc) return rc;
  }
  return 0;
}

/* Checks the name, adds its parents and makes sure the entry does not turn
 * a directory into a file or back. On success out holds the clean name. */
static int prepare_name(tar_writer *w, const char *name, char type, buf *out, char *err, size_t errlen) {
  if (w->started) return add_error(err, errlen, "cannot add '%s': the stream has already started", name);
  if (clean_name(name, out, err, errlen) != 0) return -1;
  if (add_parents(w, out->data, name, err, errlen) != 0) return -1;
  char kind = map_get(&w->names, out->data);
  if (kind == 'd' && type != '5')
    return add_error(err, errlen, "cannot add '%s': it was added as a directory", name);
  if (kind == 'f' && type == '5')
    return add_error(err, errlen, "cannot add '%s': it was added as a non-directory", name);
  return 0;
}

/* push_entry for a non-directory, recording its name. */
static int push_named(tar_writer *w, const header_spec *s, char *data, char *host_path, char *err,
                      size_t errlen) {
  if (push_entry(w, s, data, host_path) != 0 || map_put(&w->names, s->name, 'f') != 0)
    return add_error(err, errlen, "out of memory adding '%s'", s->name);
  return 0;
}

/* Stats host_path through a read-only open, so unreadable files fail now. */
static int stat_source(const char *name, const char *host_path, struct stat *st, char *err, size_t errlen) {
  int fd = open(host_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return add_error(err, errlen, "cannot add '%s' from '%s': %s", name, host_path, strerror(errno));
  int rc = fstat(fd, st);
  int saved = errno;
  close(fd);
  if (rc != 0)
    return add_error(err, errlen, "cannot add '%s' from '%s': %s", name, host_path, strerror(saved));
  if (!S_ISREG(st->st_mode))
    return add_error(err, errlen, "cannot add '%s' from '%s': not a regular file", name, host_path);
  return 0;
}

int tar_writer_add_file(tar_writer *w, const char *name, const char *host_path, char *err, size_t errlen) {
  buf clean = BUF_INIT;
  struct stat st;
  int rc = prepare_name(w, name, '0', &clean, err, errlen);
  if (rc == 0) rc = stat_source(name, host_path, &st, err, errlen);
  if (rc == 0) {
    char *copy = strdup(host_path);
    header_spec s = {clean.data, "", '0', (unsigned)st.st_mode, (long long)st.st_size,
                     (long long)st.st_mtime};
    rc = copy ? push_named(w, &s, NULL, copy, err, errlen)
              : add_error(err, errlen, "out of memory adding '%s'", name);
  }
  buf_free(&clean);
  return rc;
}

int tar_writer_add_data(tar_writer *w, const char *name, const void *data, size_t len, unsigned mode,
                        char *err, size_t errlen) {
  buf clean = BUF_INIT;
  int rc = prepare_name(w, name, '0', &clean, err, errlen);
  if (rc == 0) {
    char *copy = malloc(len ? len : 1);
    if (copy && len) memcpy(copy, data, len);
    header_spec s = {clean.data, "", '0', mode, (long long)len, (long long)time(NULL)};
    rc = copy ? push_named(w, &s, copy, NULL, err, errlen)
              : add_error(err, errlen, "out of memory adding '%s'", name);
  }
  buf_free(&clean);
  return rc;
}

int tar_writer_add_dir(tar_writer *w, const char *name, unsigned mode, char *err, size_t errlen) {
  buf clean = BUF_INIT;
  int rc = prepare_name(w, name, '5', &clean, err, errlen);
  if (rc == 0 && push_dir(w, clean.data, mode, (long long)time(NULL)) != 0)
    rc = add_error(err, errlen, "out of memory adding '%s'", name);
  buf_free(&clean);
  return rc;
}

int tar_writer_add_symlink(tar_writer *w, const char *name, const char *target, char *err, size_t errlen) {
  if (!target || !*target) return add_error(err, errlen, "cannot add symlink '%s': empty target", name);
  buf clean = BUF_INIT;
  int rc = prepare_name(w, name, '2', &clean, err, errlen);
  if (rc == 0) {
    header_spec s = {clean.data, target, '2', 0777, 0, (long long)time(NULL)};
    rc = push_named(w, &s, NULL, NULL, err, errlen);
  }
  buf_free(&clean);
  return rc;
}

long long tar_writer_size(const tar_writer *w) { return w->total + END_BLOCKS; }

const char *tar_writer_error(const tar_writer *w) { return w->err; }

#define STREAM_ERROR ((size_t)-1)

/* Records why streaming e failed; returns STREAM_ERROR. */
static size_t stream_fail(tar_writer *w, const wentry *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static size_t stream_fail(tar_writer *w, const wentry *e, const char *fmt, ...) {
  int n = snprintf(w->err, sizeof w->err, "'%s' (%s): ", e->name, e->host_path ? e->host_path : "data");
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof w->err) vsnprintf(w->err + n, sizeof w->err - (size_t)n, fmt, ap);
  va_end(ap);
  w->failed = 1;
  return STREAM_ERROR;
}

/* Opens the current entry's file and checks it still has the size it had
 * when it was added. */
static size_t open_source(tar_writer *w, const wentry *e) {
  struct stat st;
  w->fd = open(e->host_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (w->fd < 0) return stream_fail(w, e, "cannot open: %s", strerror(errno));
  if (fstat(w->fd, &st) != 0) return stream_fail(w, e, "cannot stat: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return stream_fail(w, e, "is no longer a regular file");
  if ((long long)st.st_size != e->size)
    return stream_fail(w, e, "changed size since it was added (was %lld bytes, now %lld)", e->size,
                       (long long)st.st_size);
  return 0;
}

static ssize_t read_some(int fd, char *dst, size_t n) {
  ssize_t got;
  do got = read(fd, dst, n);
  while (got < 0 && errno == EINTR);
  return got;
}

/* After the last expected byte: the file must not have grown. */
static size_t check_file_end(tar_writer *w, const wentry *e) {
  char extra;
  ssize_t got = read_some(w->fd, &extra, 1);
  if (got < 0) return stream_fail(w, e, "read failed: %s", strerror(errno));
  if (got > 0) return stream_fail(w, e, "grew while streaming (expected %lld bytes)", e->size);
  return 0;
}

/* Copies up to n data bytes of e from offset off. */
static size_t stream_data(tar_writer *w, const wentry *e, char *dst, size_t n, long long off) {
  if (e->data) {
    memcpy(dst, e->data + off, n);
    return n;
  }
  if (w->fd < 0 && open_source(w, e) != 0) return STREAM_ERROR;
  ssize_t got = read_some(w->fd, dst, n);
  if (got < 0) return stream_fail(w, e, "read failed: %s", strerror(errno));
  if (got == 0)
    return stream_fail(w, e, "shrank while streaming (expected %lld bytes, got %lld)", e->size, off);
  if (off + got == e->size && check_file_end(w, e) != 0) return STREAM_ERROR;
  return (size_t)got;
}

static size_t min_size(size_t a, long long b) { return (long long)a < b ? a : (size_t)b; }

/* Streams the current entry: header, data, padding. */
static size_t stream_entry(tar_writer *w, const wentry *e, char *dst, size_t n) {
  long long hlen = (long long)e->header.len, dend = hlen + e->size, end = dend + padding_of(e->size);
  size_t done = 0;
  while (done < n && w->pos < end) {
    size_t k;
    if (w->pos < hlen) {
      k = min_size(n - done, hlen - w->pos);
      memcpy(dst + done, e->header.data + w->pos, k);
    } else if (w->pos < dend) {
      k = stream_data(w, e, dst + done, min_size(n - done, dend - w->pos), w->pos - hlen);
      if (k == STREAM_ERROR) return k;
    } else {
      k = min_size(n - done, end - w->pos);
      memset(dst + done, 0, k);
    }
    done += k;
    w->pos += (long long)k;
  }
  return done;
}

static void close_source(tar_writer *w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
}

size_t tar_writer_read(tar_writer *w, char *dst, size_t n) {
  if (w->failed) return STREAM_ERROR;
  w->started = 1;
  size_t done = 0;
  while (done < n && w->cur < w->count) {
    const wentry *e = &w->entries[w->cur];
    size_t k = stream_entry(w, e, dst + done, n - done);
    if (k == STREAM_ERROR) {
      close_source(w);
      return k;
    }
    done += k;
    if (w->pos == (long long)e->header.len + e->size + padding_of(e->size)) {
      close_source(w);
      w->cur++;
      w->pos = 0;
    }
  }
  size_t k = min_size(n - done, END_BLOCKS - w->trailer_pos);
  memset(dst + done, 0, k);
  w->trailer_pos += (long long)k;
  return done + k;
}

void tar_writer_free(tar_writer *w) {
  if (!w) return;
  close_source(w);
  for (size_t i = 0; i < w->count; i++) free_entry(&w->entries[i]);
  free(w->entries);
  map_free(&w->names);
  free(w);
}

/* ===================== reader ===================== */

enum { R_HEADER, R_DATA, R_PAD, R_END, R_FAILED };
enum { SINK_DELIVER, SINK_SKIP, SINK_META };
enum { FROM_NONE, FROM_GNU, FROM_PAX }; /* where a long name came from; PAX wins */

struct tar_reader {
  tar_reader_callbacks cb;
  void *ctx;
  int state;
  int sink;
  unsigned char block[BLOCK];
  size_t fill;          /* bytes of block collected */
  long long remaining;  /* data bytes left in the current entry */
  long long pad;        /* padding bytes left after it */
  int owes_end;         /* on_entry_end is due when the data ends */
  int zero_blocks;      /* consecutive zero blocks seen */
  long long entries;    /* entries reported to on_entry */
  char meta_type;       /* 'x', 'L' or 'K' while collecting meta */
  buf meta;
  /* overrides for the next entry, from PAX 'x' and GNU 'L'/'K' headers */
  int pending_meta;
  buf long_name, long_link;
  int name_from, link_from;
  int has_pax_size, has_pax_mtime;
  long long pax_size, pax_mtime;
  buf name, link;       /* the current entry's */
  char err[512];
};

tar_reader *tar_reader_new(const tar_reader_callbacks *cb, void *ctx) {
  tar_reader *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->cb = *cb;
  r->ctx = ctx;
  return r;
}

static int reader_fail(tar_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int reader_fail(tar_reader *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, sizeof r->err, fmt, ap);
  va_end(ap);
  r->state = R_FAILED;
  return -1;
}

static void clear_overrides(tar_reader *r) {
  r->pending_meta = 0;
  r->name_from = r->link_from = FROM_NONE;
  r->has_pax_size = r->has_pax_mtime = 0;
}

/* Sets a long name or link from `from` unless a stronger source set it. */
static int set_override(buf *b, int *have, int from, const char *s, size_t len) {
  if (*have > from) return 0;
  *have = from;
  buf_clear(b);
  return buf_append(b, s, len);
}

/* Reads a decimal PAX value; mtime may carry a sign and a fraction. */
static int parse_decimal(const char *s, size_t len, int allow_sign_fraction, long long *out) {
  size_t i = 0;
  int neg = allow_sign_fraction && len > 0 && s[0] == '-';
  long long v = 0;
  i += (size_t)neg;
  if (i == len) return -1;
  for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
    if (v > (LLONG_MAX - 9) / 10) return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (i < len && !(allow_sign_fraction && s[i] == '.')) return -1;
  *out = neg ? -v : v;
  return 0;
}

static int key_is(const char *key, size_t klen, const char *want) {
  return klen == strlen(want) && memcmp(key, want, klen) == 0;
}

static int apply_pax_record(tar_reader *r, const char *key, size_t klen, const char *val, size_t vlen) {
  int has_nul = memchr(val, '\0', vlen) != NULL;
  if (key_is(key, klen, "path"))
    return has_nul ? -1 : set_override(&r->long_name, &r->name_from, FROM_PAX, val, vlen);
  if (key_is(key, klen, "linkpath"))
    return has_nul ? -1 : set_override(&r->long_link, &r->link_from, FROM_PAX, val, vlen);
  if (key_is(key, klen, "size")) {
    r->has_pax_size = 1;
    return parse_decimal(val, vlen, 0, &r->pax_size);
  }
  if (key_is(key, klen, "mtime")) {
    r->has_pax_mtime = 1;
    return parse_decimal(val, vlen, 1, &r->pax_mtime);
  }
  return 0; /* other keys (uid, uname, atime, ...) are not needed */
}

/* Parses PAX records "LEN key=value\n" from r->meta. */
static int parse_pax(tar_reader *r) {
  const char *p = r->meta.data ? r->meta.data : "", *end = p + r->meta.len;
  while (p < end && *p != '\0') {
    const char *q = p;
    size_t len = 0;
    while (q < end && *q >= '0' && *q <= '9' && len <= r->meta.len) len = len * 10 + (size_t)(*q++ - '0');
    if (q == p || q == end || *q != ' ') return -1;
    if (len > (size_t)(end - p) || len < (size_t)(q - p) + 3) return -1;
    const char *rec_end = p + len, *key = q + 1;
    const char *eq = memchr(key, '=', (size_t)(rec_end - 1 - key));
    if (rec_end[-1] != '\n' || !eq) return -1;
    const char *value = eq + 1;
    if (apply_pax_record(r, key, (size_t)(eq - key), value, (size_t)(rec_end - 1 - value)) != 0) return -1;
    p = rec_end;
  }
  return 0;
}

static int apply_meta(tar_reader *r) {
  const char *s = r->meta.data ? r->meta.data : "";
  size_t len = strnlen(s, r->meta.len); /* GNU names end with a NUL */
  int rc = 0;
  if (r->meta_type == 'L') rc = set_override(&r->long_name, &r->name_from, FROM_GNU, s, len);
  if (r->meta_type == 'K') rc = set_override(&r->long_link, &r->link_from, FROM_GNU, s, len);
  if (r->meta_type == 'x' && parse_pax(r) != 0)
    return reader_fail(r, "bad PAX record at entry %lld", r->entries + 1);
  if (rc != 0) return reader_fail(r, "out of memory");
  return 0;
}

/* The current entry's data (or meta record) has all arrived. */
static int end_data(tar_reader *r) {
  r->state = r->pad ? R_PAD : R_HEADER;
  if (r->sink == SINK_META) return apply_meta(r);
  if (!r->owes_end) return 0;
  r->owes_end = 0;
  if (r->cb.on_entry_end && r->cb.on_entry_end(r->ctx) != 0)
    return reader_fail(r, "stopped by on_entry_end at entry %lld", r->entries);
  return 0;
}

static int begin_data(tar_reader *r, long long size, int sink) {
  r->sink = sink;
  r->remaining = size;
  r->pad = padding_of(size);
  r->state = R_DATA;
  return size == 0 ? end_data(r) : 0;
}

static int begin_meta(tar_reader *r, char type, long long size) {
  if (size > META_MAX) return reader_fail(r, "metadata header too large at entry %lld", r->entries + 1);
  r->meta_type = type;
  r->pending_meta = 1;
  buf_clear(&r->meta);
  return begin_data(r, size, SINK_META);
}

static size_t field_len(const unsigned char *f, size_t width) { return strnlen((const char *)f, width); }

/* Fills r->name and r->link for the header in r->block. */
static int entry_names(tar_reader *r) {
  const unsigned char *h = r->block;
  int posix = memcmp(h + H_MAGIC, "ustar\0", 6) == 0;
  int rc = 0;
  buf_clear(&r->name);
  buf_clear(&r->link);
  if (r->name_from != FROM_NONE) {
    rc |= buf_append(&r->name, r->long_name.data ? r->long_name.data : "", r->long_name.len);
  } else {
    if (posix && h[H_PREFIX]) {
      rc |= buf_append(&r->name, h + H_PREFIX, field_len(h + H_PREFIX, PREFIX_LEN));
      rc |= buf_append_char(&r->name, '/');
    }
    rc |= buf_append(&r->name, h + H_NAME, field_len(h + H_NAME, NAME_LEN));
  }
  if (r->link_from != FROM_NONE)
    rc |= buf_append(&r->link, r->long_link.data ? r->long_link.data : "", r->long_link.len);
  else
    rc |= buf_append(&r->link, h + H_LINK, field_len(h + H_LINK, NAME_LEN));
  return rc ? reader_fail(r, "out of memory") : 0;
}

static char normal_type(char type, const char *name) {
  size_t len = strlen(name);
  if (type == '\0' && len > 0 && name[len - 1] == '/') return '5'; /* old tars mark dirs by a slash */
  return type == '\0' || type == '7' ? '0' : type;
}

static int header_only(char type) { return type >= '1' && type <= '6'; }

static int begin_entry(tar_reader *r, char raw_type, long long size) {
  long long mode = 0, mtime = 0;
  if (entry_names(r) != 0) return -1;
  if (parse_number(r->block + H_MODE, 8, &mode) != 0 ||
      parse_number(r->block + H_MTIME, 12, &mtime) != 0)
    return reader_fail(r, "bad number in header at entry %lld", r->entries + 1);
  tar_entry_info e = {r->name.data, r->link.data, normal_type(raw_type, r->name.data), (unsigned)mode,
                      size, mtime};
  if (r->has_pax_size) e.size = r->pax_size;
  if (r->has_pax_mtime) e.mtime = r->pax_mtime;
  if (header_only(e.type)) e.size = 0;
  clear_overrides(r);
  r->entries++;
  int rc = r->cb.on_entry ? r->cb.on_entry(r->ctx, &e) : 1;
  if (rc < 0) return reader_fail(r, "stopped by on_entry at entry %lld", r->entries);
  r->owes_end = 1;
  return begin_data(r, e.size, rc == 0 && r->cb.on_data ? SINK_DELIVER : SINK_SKIP);
}

static int is_zero_block(const unsigned char *h) { return memcmp(h, zero_block, BLOCK) == 0; }

static int checksum_ok(const unsigned char *h) {
  long long stored;
  long ssum;
  if (parse_octal(h + H_CHKSUM, 8, &stored) != 0) return 0;
  unsigned long sum = header_sum(h, &ssum);
  return stored == (long long)sum || stored == ssum;
}

static int process_header(tar_reader *r) {
  const unsigned char *h = r->block;
  if (is_zero_block(h)) {
    if (++r->zero_blocks == 2) r->state = R_END;
    return 0;
  }
  r->zero_blocks = 0;
  if (!checksum_ok(h)) return reader_fail(r, "bad header checksum at entry %lld", r->entries + 1);
  long long size;
  if (parse_number(h + H_SIZE, 12, &size) != 0 || size < 0)
    return reader_fail(r, "bad size in header at entry %lld", r->entries + 1);
  char type = (char)h[H_TYPE];
  if (type == 'x' || type == 'L' || type == 'K') return begin_meta(r, type, size);
  if (type == 'g') return begin_data(r, size, SINK_SKIP); /* global PAX: ignored */
  return begin_entry(r, type, size);
}

static size_t take_header(tar_reader *r, const char *data, size_t n) {
  size_t k = n < BLOCK - r->fill ? n : BLOCK - r->fill;
  memcpy(r->block + r->fill, data, k);
  r->fill += k;
  if (r->fill == BLOCK) {
    r->fill = 0;
    process_header(r);
  }
  return k;
}

static size_t take_data(tar_reader *r, const char *data, size_t n) {
  size_t k = min_size(n, r->remaining);
  r->remaining -= (long long)k;
  if (r->sink == SINK_DELIVER && r->cb.on_data(r->ctx, data, k) != 0) {
    reader_fail(r, "stopped by on_data at entry %lld", r->entries);
    return k;
  }
  if (r->sink == SINK_META && buf_append(&r->meta, data, k) != 0) {
    reader_fail(r, "out of memory");
    return k;
  }
  if (r->remaining == 0) end_data(r);
  return k;
}

static size_t take_padding(tar_reader *r, size_t n) {
  size_t k = min_size(n, r->pad);
  r->pad -= (long long)k;
  if (r->pad == 0) r->state = R_HEADER;
  return k;
}

int tar_reader_feed(tar_reader *r, const char *data, size_t n) {
  while (n > 0 && r->state != R_FAILED && r->state != R_END) {
    size_t k;
    if (r->state == R_HEADER)
      k = take_header(r, data, n);
    else if (r->state == R_DATA)
      k = take_data(r, data, n);
    else
      k = take_padding(r, n);
    data += k;
    n -= k;
  }
  return r->state == R_FAILED ? -1 : 0;
}

int tar_reader_finish(tar_reader *r) {
  if (r->state == R_FAILED) return -1;
  if (r->state == R_END) return 0;
  if (r->state == R_HEADER && r->fill == 0 && !r->pending_meta) return 0;
  if (r->state == R_HEADER || r->sink == SINK_META)
    return reader_fail(r, "truncated tar stream: it ends inside a header (entry %lld)", r->entries + 1);
  return reader_fail(r, "truncated tar stream: it ends inside the data of entry %lld ('%s')", r->entries,
                     r->name.data ? r->name.data : "");
}

const char *tar_reader_error(const tar_reader *r) { return r->err; }

void tar_reader_free(tar_reader *r) {
  if (!r) return;
  buf_free(&r->meta);
  buf_free(&r->long_name);
  buf_free(&r->long_link);
  buf_free(&r->name);
  buf_free(&r->link);
  free(r);
}

/* ===================== safe extraction ===================== */

typedef struct extracted_file {
  char *path;
  long long size;
} extracted_file;

typedef struct refusal {
  char *name;
  const char *reason; /* a string literal */
} refusal;

struct tar_extract {
  int dest;            /* dirfd of the destination: every path starts here */
  char *strip;         /* normalised strip prefix, or NULL */
  tar_reader *reader;
  int fd;              /* the file being written, or -1 */
  char *cur_path;      /* its path relative to dest */
  long long cur_written, cur_mtime;
  name_map seen;       /* names extracted: 'f' regular file, 'o' anything else */
  extracted_file *files;
  size_t nfiles, files_cap;
  refusal *refused;
  size_t nrefused, refused_cap;
  long long bytes;
  long long max_bytes;  /* 0: no limit */
  size_t max_entries;   /* 0: no limit */
  size_t entries;
  char err[1024];
};

/* Outcomes of one extraction step; file descriptors are >= 0. */
enum { STEP_OK = 0, STEP_REFUSED = -1, STEP_FAILED = -2 };

/* on_entry's answer for a step that did not succeed. */
static int step_answer(int step) { return step == STEP_FAILED ? -1 : 1; }

static int extract_fail(tar_extract *x, const char *what, const char *path) {
  snprintf(x->err, sizeof x->err, "%s '%s': %s", what, path, strerror(errno));
  return STEP_FAILED;
}

static int out_of_memory(tar_extract *x) {
  snprintf(x->err, sizeof x->err, "out of memory");
  return STEP_FAILED;
}

static int record_file(tar_extract *x, const char *rel, long long size) {
  char *copy = strdup(rel);
  extracted_file *files = grow_array(x->files, &x->files_cap, x->nfiles, sizeof *files);
  if (files) x->files = files;
  if (!copy || !files || map_put(&x->seen, rel, 'f') != 0) {
    free(copy);
    return out_of_memory(x);
  }
  x->files[x->nfiles++] = (extracted_file){copy, size};
  return STEP_OK;
}

/* Records a refused entry; on_entry then skips its data. */
static int refuse(tar_extract *x, const char *name, const char *reason) {
  char *copy = strdup(name);
  refusal *refused = grow_array(x->refused, &x->refused_cap, x->nrefused, sizeof *refused);
  if (refused) x->refused = refused;
  if (!copy || !refused) {
    free(copy);
    out_of_memory(x);
    return -1;
  }
  x->refused[x->nrefused++] = (refusal){copy, reason};
  return 1;
}

/* Normalises an archive name into out ("a/b"; "" for the destination
 * itself): drops a leading "./" and any empty or "." components. Returns
 * NULL, or why the name is refused. */
static const char *normalize_name(const char *name, buf *out) {
  buf_clear(out);
  if (buf_append(out, "", 0) != 0) return "out of memory";
  if (name[0] == '/') return "absolute path";
  for (const char *p = name; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.') return "'..' in path";
    if (len > 0 && !(len == 1 && p[0] == '.')) {
      if (out->len && buf_append_char(out, '/') != 0) return "out of memory";
      if (buf_append(out, p, len) != 0) return "out of memory";
    }
    p += len;
    if (*p == '/') p++;
  }
  return NULL;
}

/* Removes the strip prefix: "output/a" -> "a"; "output" -> "" when it is a
 * directory, unchanged otherwise. */
static void apply_strip(const tar_extract *x, buf *rel, char type) {
  if (!x->strip) return;
  size_t len = strlen(x->strip);
  if (strcmp(rel->data, x->strip) == 0) {
    if (type == '5') buf_clear(rel);
  } else if (strncmp(rel->data, x->strip, len) == 0 && rel->data[len] == '/') {
    buf_consume(rel, len + 1);
  }
}

static const char *leaf_of(const char *rel) {
  const char *slash = strrchr(rel, '/');
  return slash ? slash + 1 : rel;
}

/* Explains why openat(O_DIRECTORY|O_NOFOLLOW) refused comp. */
static int explain_not_dir(tar_extract *x, int dirfd, const char *comp, const char *rel,
                           const char **reason) {
  int saved = errno;
  struct stat st;
  if (fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    *reason = S_ISLNK(st.st_mode) ? "path goes through a symlink" : "path goes through a non-directory";
    return STEP_REFUSED;
  }
  errno = saved;
  return extract_fail(x, "cannot open a directory on the way to", rel);
}

/* Opens (creating it when `create`) the directory comp inside dirfd,
 * refusing symlinks. */
static int enter_dir(tar_extract *x, int dirfd, const char *comp, int create, const char *rel,
                     const char **reason) {
  if (create && mkdirat(dirfd, comp, 0755) != 0 && errno != EEXIST)
    return extract_fail(x, "cannot create a directory on the way to", rel);
  int fd = openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd >= 0 ? fd : explain_not_dir(x, dirfd, comp, rel, reason);
}

/* Opens the directory holding rel's last component, walking from dest one
 * component at a time and never following a symlink. Returns a dirfd, or
 * STEP_REFUSED (*reason set) or STEP_FAILED (x->err set). */
static int open_parent(tar_extract *x, const char *rel, int create, const char **reason) {
  char comp[NAME_MAX + 1];
  if (strlen(leaf_of(rel)) > NAME_MAX) return *reason = "name too long", STEP_REFUSED;
  int fd = fcntl(x->dest, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return extract_fail(x, "cannot open the destination for", rel);
  for (const char *p = rel, *slash; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
    size_t len = (size_t)(slash - p);
    if (len > NAME_MAX) {
      close(fd);
      return *reason = "name too long", STEP_REFUSED;
    }
    memcpy(comp, p, len);
    comp[len] = '\0';
    int next = enter_dir(x, fd, comp, create, rel, reason);
    close(fd);
    if (next < 0) return next;
    fd = next;
  }
  return fd;
}

/* Makes room for a new non-directory at leaf by removing whatever
 * non-directory is there (so nothing is ever written through it). */
static int clear_leaf(tar_extract *x, int dirfd, const char *rel, const char **reason) {
  struct stat st;
  const char *leaf = leaf_of(rel);
  if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? STEP_OK : extract_fail(x, "cannot inspect", rel);
  if (S_ISDIR(st.st_mode)) return *reason = "a directory is in the way", STEP_REFUSED;
  if (unlinkat(dirfd, leaf, 0) != 0) return extract_fail(x, "cannot replace", rel);
  return STEP_OK;
}

/* Opens rel's parent and clears rel's place for a new non-directory.
 * Returns the parent's dirfd or a failed step. */
static int prepare_leaf(tar_extract *x, const char *rel, const char **reason) {
  int dirfd = open_parent(x, rel, 1, reason);
  if (dirfd < 0) return dirfd;
  int step = clear_leaf(x, dirfd, rel, reason);
  if (step == STEP_OK) return dirfd;
  close(dirfd);
  return step;
}

static int create_file(tar_extract *x, const char *rel, const tar_entry_info *e, const char **reason) {
  int dirfd = prepare_leaf(x, rel, reason);
  if (dirfd < 0) return step_answer(dirfd);
  x->fd = openat(dirfd, leaf_of(rel), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                 (mode_t)(e->mode & 0777));
  int step = x->fd < 0 ? extract_fail(x, "cannot create", rel) : STEP_OK;
  close(dirfd);
  if (step != STEP_OK) return step_answer(step);
  x->cur_path = strdup(rel);
  x->cur_written = 0;
  x->cur_mtime = e->mtime;
  if (!x->cur_path || map_put(&x->seen, rel, 'o') != 0) return step_answer(out_of_memory(x));
  return 0; /* deliver the data */
}

/* mkdirat said EEXIST: fine for a directory, refused for anything else. */
static int check_existing_dir(tar_extract *x, int dirfd, const char *rel, const char **reason) {
  struct stat st;
  if (fstatat(dirfd, leaf_of(rel), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return extract_fail(x, "cannot inspect", rel);
  if (S_ISDIR(st.st_mode)) return STEP_OK;
  *reason = S_ISLNK(st.st_mode) ? "path goes through a symlink" : "a non-directory is in the way";
  return STEP_REFUSED;
}

/* Directories are made owner-writable so later entries can go inside. */
static int create_dir(tar_extract *x, const char *rel, unsigned mode, const char **reason) {
  int dirfd = open_parent(x, rel, 1, reason);
  if (dirfd < 0) return step_answer(dirfd);
  int step = STEP_OK;
  if (mkdirat(dirfd, leaf_of(rel), (mode_t)((mode & 0777) | 0700)) != 0) {
    step = errno == EEXIST ? check_existing_dir(x, dirfd, rel, reason)
                           : extract_fail(x, "cannot create", rel);
  }
  close(dirfd);
  if (step == STEP_OK && map_put(&x->seen, rel, 'o') != 0) step = out_of_memory(x);
  return step_answer(step);
}

/* Why a symlink at rel pointing to target is refused, or NULL. The target
 * must be relative, may only climb ("..") before it names anything (so it
 * never climbs out of another symlink), and must stay inside dest. */
static const char *symlink_problem(const char *rel, const char *target) {
  if (!*target) return "empty symlink target";
  if (target[0] == '/') return "symlink target leaves the destination";
  size_t depth = 0; /* directories between dest and the symlink */
  for (const char *p = rel; *p; p++) depth += *p == '/';
  int named = 0;
  for (const char *p = target; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.') {
      if (named) return "symlink target has '..' after a name";
      if (depth == 0) return "symlink target leaves the destination";
      depth--;
    } else if (len > 0 && !(len == 1 && p[0] == '.')) {
      named = 1;
    }
    p += len;
    if (*p == '/') p++;
  }
  return NULL;
}

static int create_symlink(tar_extract *x, const char *rel, const char *target, const char **reason) {
  if ((*reason = symlink_problem(rel, target)) != NULL) return 1;
  int dirfd = prepare_leaf(x, rel, reason);
  if (dirfd < 0) return step_answer(dirfd);
  int step = STEP_OK;
  if (symlinkat(target, dirfd, leaf_of(rel)) != 0) step = extract_fail(x, "cannot create symlink", rel);
  close(dirfd);
  if (step == STEP_OK && map_put(&x->seen, rel, 'o') != 0) step = out_of_memory(x);
  return step_answer(step);
}

/* Opens the directory of a hard link's target, which must be a regular file
 * this archive extracted; fills st. */
static int open_link_target(tar_extract *x, const char *target, struct stat *st, const char **reason) {
  if (map_get(&x->seen, target) != 'f') return *reason = "hard link to unknown target", STEP_REFUSED;
  int dirfd = open_parent(x, target, 0, reason);
  if (dirfd < 0) return dirfd;
  if (fstatat(dirfd, leaf_of(target), st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode))
    return dirfd;
  close(dirfd);
  return *reason = "hard link to unknown target", STEP_REFUSED;
}

static int link_to(tar_extract *x, const char *rel, const char *target, const char **reason) {
  struct stat st;
  int from = open_link_target(x, target, &st, reason);
  if (from < 0) return step_answer(from);
  int to = prepare_leaf(x, rel, reason);
  int step = to;
  if (to >= 0) {
    step = STEP_OK;
    if (linkat(from, leaf_of(target), to, leaf_of(rel), 0) != 0) step = extract_fail(x, "cannot link", rel);
    close(to);
  }
  close(from);
  if (step == STEP_OK) step = record_file(x, rel, (long long)st.st_size);
  return step_answer(step);
}

static int create_hardlink(tar_extract *x, const char *rel, const char *linkname, const char **reason) {
  buf target = BUF_INIT;
  int answer = 1;
  if (normalize_name(linkname, &target) != NULL) {
    *reason = "hard link target leaves the destination";
  } else {
    apply_strip(x, &target, '0');
    if (strcmp(target.data, rel) != 0) answer = link_to(x, rel, target.data, reason);
  }
  buf_free(&target);
  return answer;
}

/* Extracts one entry at rel. Returns on_entry's answer: 0 deliver data,
 * 1 skip (done, or refused with *reason set), -1 fatal. */
static int extract_entry(tar_extract *x, const tar_entry_info *e, const char *rel, const char **reason) {
  if (!*rel) return 1; /* the destination itself */
  switch (e->type) {
    case '0': return create_file(x, rel, e, reason);
    case '5': return create_dir(x, rel, e->mode, reason);
    case '2': return create_symlink(x, rel, e->linkname, reason);
    case '1': return create_hardlink(x, rel, e->linkname, reason);
    case '3': case '4': case '6': *reason = "device or fifo"; return 1;
    default: *reason = "unsupported entry type"; return 1;
  }
}

/* A sandbox can make a terabyte sparse file for free: the sizes the headers
 * declare are checked against the limits before anything is written. */
static const char *over_limit(tar_extract *x, const tar_entry_info *e) {
  if (x->max_entries && ++x->entries > x->max_entries) return "more entries than the extraction limit allows";
  if (x->max_bytes && e->type == '0' && x->bytes + e->size > x->max_bytes)
    return "larger than what the extraction limit still allows";
  return NULL;
}

static int on_entry(void *ctx, const tar_entry_info *e) {
  tar_extract *x = ctx;
  buf rel = BUF_INIT;
  const char *reason = over_limit(x, e);
  if (!reason) reason = normalize_name(e->name, &rel);
  int answer = 1;
  if (!reason) {
    apply_strip(x, &rel, e->type);
    answer = extract_entry(x, e, rel.data, &reason);
  }
  if (reason && answer >= 0) answer = refuse(x, e->name, reason);
  buf_free(&rel);
  return answer;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int on_data(void *ctx, const char *data, size_t n) {
  tar_extract *x = ctx;
  if (x->fd < 0) return 0;
  if (write_all(x->fd, data, n) != 0) return extract_fail(x, "cannot write", x->cur_path);
  x->cur_written += (long long)n;
  x->bytes += (long long)n;
  if (x->max_bytes && x->bytes > x->max_bytes) return extract_fail(x, "over the extraction limit:", x->cur_path);
  return 0;
}

void tar_extract_set_limits(tar_extract *x, long long max_bytes, size_t max_entries) {
  x->max_bytes = max_bytes;
  x->max_entries = max_entries;
}

static void drop_current(tar_extract *x) {
  if (x->fd >= 0) close(x->fd);
  x->fd = -1;
  free(x->cur_path);
  x->cur_path = NULL;
}

/* A regular file is complete: set its mtime, close it, record it. */
static int on_entry_end(void *ctx) {
  tar_extract *x = ctx;
  if (x->fd < 0) return 0;
  struct timespec times[2] = {{0, UTIME_OMIT}, {(time_t)x->cur_mtime, 0}};
  futimens(x->fd, times); /* best effort: the data is what matters */
  int rc = close(x->fd);
  x->fd = -1;
  int step = rc == 0 ? record_file(x, x->cur_path, x->cur_written)
                     : extract_fail(x, "cannot write", x->cur_path);
  drop_current(x);
  return step == STEP_OK ? 0 : -1;
}

/* The strip prefix in normal form, or NULL for none. */
static int set_strip(tar_extract *x, const char *strip, char *err, size_t errlen) {
  buf norm = BUF_INIT;
  const char *why = strip ? normalize_name(strip, &norm) : NULL;
  int rc = 0;
  if (why) rc = add_error(err, errlen, "bad strip prefix '%s': %s", strip, why);
  if (!why && norm.len > 0) x->strip = norm.data, norm.data = NULL;
  buf_free(&norm);
  return rc;
}

tar_extract *tar_extract_new(const char *dest_dir, const char *strip, char *err, size_t errlen) {
  static const tar_reader_callbacks callbacks = {on_entry, on_data, on_entry_end};
  tar_extract *x = calloc(1, sizeof *x);
  if (!x) {
    add_error(err, errlen, "out of memory");
    return NULL;
  }
  x->fd = -1;
  x->dest = -1;
  int rc = set_strip(x, strip, err, errlen);
  if (rc == 0 && fs_mkdir_p(dest_dir, 0755) != 0)
    rc = add_error(err, errlen, "cannot create destination '%s': %s", dest_dir, strerror(errno));
  if (rc == 0 && (x->dest = open(dest_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    rc = add_error(err, errlen, "cannot open destination '%s': %s", dest_dir, strerror(errno));
  if (rc == 0 && !(x->reader = tar_reader_new(&callbacks, x))) rc = add_error(err, errlen, "out of memory");
  if (rc != 0) {
    tar_extract_free(x);
    return NULL;
  }
  return x;
}

int tar_extract_feed(tar_extract *x, const char *data, size_t n) {
  if (x->err[0]) return -1;
  return tar_reader_feed(x->reader, data, n);
}

int tar_extract_finish(tar_extract *x) {
  if (x->err[0]) return -1;
  int rc = tar_reader_finish(x->reader);
  drop_current(x); /* a truncated file stays as far as it got */
  return rc;
}

const char *tar_extract_error(const tar_extract *x) {
  return x->err[0] ? x->err : tar_reader_error(x->reader);
}

size_t tar_extract_file_count(const tar_extract *x) { return x->nfiles; }
const char *tar_extract_file_path(const tar_extract *x, size_t i) {
  return i < x->nfiles ? x->files[i].path : NULL;
}
long long tar_extract_file_size(const tar_extract *x, size_t i) {
  return i < x->nfiles ? x->files[i].size : -1;
}
size_t tar_extract_refused_count(const tar_extract *x) { return x->nrefused; }
const char *tar_extract_refused_name(const tar_extract *x, size_t i) {
  return i < x->nrefused ? x->refused[i].name : NULL;
}
const char *tar_extract_refused_reason(const tar_extract *x, size_t i) {
  return i < x->nrefused ? x->refused[i].reason : NULL;
}
long long tar_extract_bytes(const tar_extract *x) { return x->bytes; }

void tar_extract_free(tar_extract *x) {
  if (!x) return;
  drop_current(x);
  if (x->dest >= 0) close(x->dest);
  tar_reader_free(x->reader);
  for (size_t i = 0; i < x->nfiles; i++) free(x->files[i].path);
  for (size_t i = 0; i < x->nrefused; i++) free(x->refused[i].name);
  free(x->files);
  free(x->refused);
  map_free(&x->seen);
  free(x->strip);
  free(x);
}

/* tar_writer: a ustar stream (PAX headers for long names) built chunk by
 * chunk for PUT /containers/{id}/archive (see tar.h). Files are read lazily,
 * while streaming: a 1 GB input never sits in memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "tar.h"
#include "tar_internal.h"

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

static void put_checksum(char *h) {
  unsigned long sum = tar_header_sum((const unsigned char *)h, NULL);
  put_number(h + H_CHKSUM, 7, sum); /* six digits and a NUL ... */
  h[H_CHKSUM + 7] = ' ';            /* ... then a space, as tar does */
}

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
  tar_name_map names;   /* every name added: 'd' directory, 'f' anything else */
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
  if (why) return tar_set_error(err, errlen, "bad entry name '%s': %s", name, why);
  if (buf_append(out, name, len) != 0) return tar_set_error(err, errlen, "out of memory adding '%s'", name);
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
  if (rc == 0) rc = buf_append(out, tar_zero_block, (size_t)tar_padding_of((long long)records->len));
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
    wentry *grown = tar_grow_array(w->entries, &w->cap, w->count, sizeof *grown);
    if (grown) w->entries = grown;
    ok = grown != NULL;
  }
  if (!ok) {
    free_entry(&e);
    return -1;
  }
  w->entries[w->count++] = e;
  w->total += (long long)e.header.len + e.size + tar_padding_of(e.size);
  return 0;
}

static int push_dir(tar_writer *w, const char *name, unsigned mode, long long mtime) {
  buf slashed = BUF_INIT;
  int rc = buf_printf(&slashed, "%s/", name);
  header_spec s = {slashed.data, "", '5', mode, 0, mtime};
  if (rc == 0) rc = push_entry(w, &s, NULL, NULL);
  if (rc == 0) rc = tar_map_put(&w->names, name, 'd');
  buf_free(&slashed);
  return rc;
}

/* Adds every missing parent directory of name (mode 0755), once each. */
static int add_parents(tar_writer *w, char *name, const char *entry, char *err, size_t errlen) {
  for (char *p = strchr(name, '/'); p; p = strchr(p + 1, '/')) {
    *p = '\0';
    char kind = tar_map_get(&w->names, name);
    int rc = 0;
    if (kind == 'f')
      rc = tar_set_error(err, errlen, "cannot add '%s': '%s' was added as a non-directory", entry, name);
    if (kind == 0 && push_dir(w, name, 0755, (long long)time(NULL)) != 0)
      rc = tar_set_error(err, errlen, "out of memory adding '%s'", name);
    *p = '/';
    if (rc) return rc;
  }
  return 0;
}

/* Checks the name, adds its parents and makes sure the entry does not turn
 * a directory into a file or back. On success out holds the clean name. */
static int prepare_name(tar_writer *w, const char *name, char type, buf *out, char *err, size_t errlen) {
  if (w->started) return tar_set_error(err, errlen, "cannot add '%s': the stream has already started", name);
  if (clean_name(name, out, err, errlen) != 0) return -1;
  if (add_parents(w, out->data, name, err, errlen) != 0) return -1;
  char kind = tar_map_get(&w->names, out->data);
  if (kind == 'd' && type != '5')
    return tar_set_error(err, errlen, "cannot add '%s': it was added as a directory", name);
  if (kind == 'f' && type == '5')
    return tar_set_error(err, errlen, "cannot add '%s': it was added as a non-directory", name);
  return 0;
}

/* push_entry for a non-directory, recording its name. */
static int push_named(tar_writer *w, const header_spec *s, char *data, char *host_path, char *err,
                      size_t errlen) {
  if (push_entry(w, s, data, host_path) != 0 || tar_map_put(&w->names, s->name, 'f') != 0)
    return tar_set_error(err, errlen, "out of memory adding '%s'", s->name);
  return 0;
}

/* Stats host_path through a read-only open, so unreadable files fail now. */
static int stat_source(const char *name, const char *host_path, struct stat *st, char *err, size_t errlen) {
  int fd = open(host_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return tar_set_error(err, errlen, "cannot add '%s' from '%s': %s", name, host_path, strerror(errno));
  int rc = fstat(fd, st);
  int saved = errno;
  close(fd);
  if (rc != 0)
    return tar_set_error(err, errlen, "cannot add '%s' from '%s': %s", name, host_path, strerror(saved));
  if (!S_ISREG(st->st_mode))
    return tar_set_error(err, errlen, "cannot add '%s' from '%s': not a regular file", name, host_path);
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
              : tar_set_error(err, errlen, "out of memory adding '%s'", name);
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
              : tar_set_error(err, errlen, "out of memory adding '%s'", name);
  }
  buf_free(&clean);
  return rc;
}

int tar_writer_add_dir(tar_writer *w, const char *name, unsigned mode, char *err, size_t errlen) {
  buf clean = BUF_INIT;
  int rc = prepare_name(w, name, '5', &clean, err, errlen);
  if (rc == 0 && push_dir(w, clean.data, mode, (long long)time(NULL)) != 0)
    rc = tar_set_error(err, errlen, "out of memory adding '%s'", name);
  buf_free(&clean);
  return rc;
}

int tar_writer_add_symlink(tar_writer *w, const char *name, const char *target, char *err, size_t errlen) {
  if (!target || !*target) return tar_set_error(err, errlen, "cannot add symlink '%s': empty target", name);
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

/* Streams the current entry: header, data, padding. */
static size_t stream_entry(tar_writer *w, const wentry *e, char *dst, size_t n) {
  long long hlen = (long long)e->header.len, dend = hlen + e->size, end = dend + tar_padding_of(e->size);
  size_t done = 0;
  while (done < n && w->pos < end) {
    size_t k;
    if (w->pos < hlen) {
      k = tar_min_size(n - done, hlen - w->pos);
      memcpy(dst + done, e->header.data + w->pos, k);
    } else if (w->pos < dend) {
      k = stream_data(w, e, dst + done, tar_min_size(n - done, dend - w->pos), w->pos - hlen);
      if (k == STREAM_ERROR) return k;
    } else {
      k = tar_min_size(n - done, end - w->pos);
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
    if (w->pos == (long long)e->header.len + e->size + tar_padding_of(e->size)) {
      close_source(w);
      w->cur++;
      w->pos = 0;
    }
  }
  size_t k = tar_min_size(n - done, END_BLOCKS - w->trailer_pos);
  memset(dst + done, 0, k);
  w->trailer_pos += (long long)k;
  return done + k;
}

void tar_writer_free(tar_writer *w) {
  if (!w) return;
  close_source(w);
  for (size_t i = 0; i < w->count; i++) free_entry(&w->entries[i]);
  free(w->entries);
  tar_map_free(&w->names);
  free(w);
}

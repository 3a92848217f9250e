/* pack: the tree walk and the tar writer of the `pack` op (see pack.h). */
#include "pack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "frames.h"
#include "nofollow.h"

#define BLOCK 512
#define MAX_DEPTH 4096
#define OCTAL_SIZE_MAX 077777777777LL /* what 11 octal digits hold */

typedef struct hardlink {
  dev_t dev;
  ino_t ino;
  char *path;
} hardlink;

typedef struct packer {
  const pack_spec *spec;
  buf path;           /* archive path of the current entry */
  buf out;            /* pending stdout bytes */
  long long bytes, entries;
  int stopped;        /* the entry limit was reached */
  hardlink *links;
  size_t nlinks, links_cap;
} packer;

/* ---- output ---- */

static void flush_out(packer *p, size_t keep_below) {
  if (p->out.len < keep_below) return;
  if (write_all(1, p->out.data, p->out.len) != 0) _exit(1);
  buf_clear(&p->out);
}

static void emit(packer *p, const void *data, size_t n) {
  if (buf_append(&p->out, data, n) != 0) _exit(1);
  flush_out(p, 65536);
}

static void left_out(const char *reason, const char *path) {
  buf line = BUF_INIT;
  buf_printf(&line, "%s %zu:%s\n", reason, strlen(path), path);
  write_all(2, line.data, line.len);
  buf_free(&line);
}

/* ---- headers ---- */

/* width - 1 octal digits and a NUL; callers keep value within them. */
static void octal(char *field, size_t width, unsigned long long value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0; value >>= 3) field[i] = (char)('0' + (value & 7));
}

static void pax_record(buf *records, const char *key, const char *value) {
  size_t body = strlen(key) + strlen(value) + 3; /* ' ' '=' '\n' */
  size_t len = body + 1;
  while (len != body + (size_t)snprintf(NULL, 0, "%zu", len)) len = body + (size_t)snprintf(NULL, 0, "%zu", len);
  buf_printf(records, "%zu %s=%s\n", len, key, value);
}

static void raw_header(packer *p, const char *name, const char *link, char type, const struct stat *st,
                       long long size) {
  unsigned char h[BLOCK];
  memset(h, 0, sizeof h);
  snprintf((char *)h, 100, "%s", name);
  octal((char *)h + 100, 8, st->st_mode & 07777);
  octal((char *)h + 108, 8, st->st_uid & 07777777);
  octal((char *)h + 116, 8, st->st_gid & 07777777);
  octal((char *)h + 124, 12, (unsigned long long)(size <= OCTAL_SIZE_MAX ? size : 0));
  octal((char *)h + 136, 12, (unsigned long long)(st->st_mtime > 0 ? st->st_mtime : 0));
  h[156] = (unsigned char)type;
  snprintf((char *)h + 157, 100, "%s", link);
  memcpy(h + 257, "ustar\0" "00", 8);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < sizeof h; i++) sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  emit(p, h, sizeof h);
}

static void pad(packer *p, long long size) {
  static const char zeros[BLOCK];
  size_t rest = (size_t)(size % BLOCK);
  if (rest) emit(p, zeros, BLOCK - rest);
}

/* A header for the current path; a PAX header first when the name, the link
 * or the size does not fit ustar. */
static void header(packer *p, char type, const char *link, const struct stat *st, long long size) {
  buf name = BUF_INIT, records = BUF_INIT;
  buf_append(&name, p->path.data, p->path.len);
  if (type == '5') buf_append_char(&name, '/');
  if (name.len > 99) pax_record(&records, "path", name.data);
  if (strlen(link) > 99) pax_record(&records, "linkpath", link);
  if (size > OCTAL_SIZE_MAX) {
    char text[32];
    snprintf(text, sizeof text, "%lld", size);
    pax_record(&records, "size", text);
  }
  if (records.len) {
    struct stat meta = *st;
    meta.st_mode = 0644;
    raw_header(p, "././@PaxHeader", "", 'x', &meta, (long long)records.len);
    emit(p, records.data, records.len);
    pad(p, (long long)records.len);
  }
  raw_header(p, name.data, link, type, st, size);
  buf_free(&name);
  buf_free(&records);
}

/* ---- entries ---- */

static const char *first_link(packer *p, const struct stat *st) {
  for (size_t i = 0; i < p->nlinks; i++)
    if (p->links[i].dev == st->st_dev && p->links[i].ino == st->st_ino) return p->links[i].path;
  if (p->nlinks == p->links_cap) {
    size_t cap = p->links_cap ? p->links_cap * 2 : 16;
    hardlink *links = realloc(p->links, cap * sizeof *links);
    if (!links) return NULL;
    p->links = links, p->links_cap = cap;
  }
  char *copy = strdup(p->path.data);
  if (copy) p->links[p->nlinks++] = (hardlink){st->st_dev, st->st_ino, copy};
  return NULL;
}

/* Streams exactly size bytes of the file: cut or zero-padded if it changed. */
static void file_data(packer *p, int fd, long long size) {
  char chunk[65536];
  long long sent = 0;
  while (sent < size) {
    size_t want = size - sent < (long long)sizeof chunk ? (size_t)(size - sent) : sizeof chunk;
    ssize_t n = read_some(fd, chunk, want);
    if (n <= 0) break;
    emit(p, chunk, (size_t)n);
    sent += n;
  }
  if (sent < size || read_some(fd, chunk, 1) > 0) left_out("changed", p->path.data);
  memset(chunk, 0, sizeof chunk);
  for (; sent < size; sent += (long long)sizeof chunk)
    emit(p, chunk, size - sent < (long long)sizeof chunk ? (size_t)(size - sent) : sizeof chunk);
  pad(p, size);
}

static void regular_file(packer *p, int dirfd, const char *name, const struct stat *st) {
  const pack_spec *spec = p->spec;
  if (spec->max_bytes && p->bytes + st->st_size > spec->max_bytes) {
    left_out("too_big", p->path.data);
    return;
  }
  const char *link = st->st_nlink > 1 ? first_link(p, st) : NULL;
  if (link) {
    header(p, '1', link, st, 0);
    return;
  }
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    left_out("unreadable", p->path.data);
    return;
  }
  p->bytes += st->st_size;
  header(p, '0', "", st, st->st_size);
  file_data(p, fd, st->st_size);
  close(fd);
}

static void entry(packer *p, int dirfd, const char *name, int depth);

static void directory(packer *p, int dirfd, const char *name, const struct stat *st, int depth) {
  if (depth >= MAX_DEPTH) {
    left_out("too_deep", p->path.data);
    return;
  }
  int fd = open_dir_nofollow(dirfd, name);
  DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
  if (!dir) {
    if (fd >= 0) close(fd);
    left_out("unreadable", p->path.data);
    return;
  }
  header(p, '5', "", st, 0);
  size_t len = p->path.len;
  for (struct dirent *d; !p->stopped && (d = readdir(dir));) {
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    buf_append_char(&p->path, '/');
    buf_append_str(&p->path, d->d_name);
    entry(p, fd, d->d_name, depth + 1);
    p->path.len = len;
    p->path.data[len] = '\0';
  }
  closedir(dir);
}

static void entry(packer *p, int dirfd, const char *name, int depth) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    left_out("unreadable", p->path.data);
    return;
  }
  if (p->spec->max_entries && p->entries >= p->spec->max_entries) {
    left_out("too_many", p->path.data);
    p->stopped = 1;
    return;
  }
  p->entries++;
  if (S_ISDIR(st.st_mode)) {
    directory(p, dirfd, name, &st, depth);
  } else if (S_ISREG(st.st_mode)) {
    regular_file(p, dirfd, name, &st);
  } else if (S_ISLNK(st.st_mode)) {
    buf target = BUF_INIT;
    buf_reserve(&target, (size_t)st.st_size + 1);
    ssize_t n = target.data ? readlinkat(dirfd, name, target.data, (size_t)st.st_size + 1) : -1;
    if (n >= 0 && n <= st.st_size) {
      target.data[n] = '\0';
      header(p, '2', target.data, &st, 0);
    } else {
      left_out("unreadable", p->path.data);
    }
    buf_free(&target);
  } else {
    left_out("special", p->path.data);
  }
}

/* The parent directory of path opened, and its last component in *base. */
static int open_parent(const char *path, buf *base) {
  buf copy = BUF_INIT;
  buf_append_str(&copy, path);
  while (copy.len > 1 && copy.data[copy.len - 1] == '/') copy.data[--copy.len] = '\0';
  char *slash = strrchr(copy.data, '/');
  const char *parent = slash == copy.data ? "/" : slash ? copy.data : ".";
  if (slash) *slash = '\0';
  buf_append_str(base, slash ? slash + 1 : copy.data);
  int fd = base->len && strcmp(base->data, "..") != 0 ? open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  buf_free(&copy);
  return fd;
}

int pack_main(void *ctx) {
  packer p = {.spec = ctx};
  buf base = BUF_INIT;
  int dirfd = open_parent(p.spec->path, &base);
  struct stat st;
  if (dirfd < 0 || fstatat(dirfd, base.data, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    left_out("missing", p.spec->path);
    return 2;
  }
  buf_append_str(&p.path, strcmp(base.data, ".") == 0 ? "." : base.data);
  entry(&p, dirfd, base.data, 0);
  static const char end[2 * BLOCK];
  emit(&p, end, sizeof end);
  flush_out(&p, 0);
  return 0;
}

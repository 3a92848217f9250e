/* Shared by the tar tests (test_tar.c, test_tar_extract.c): temporary
 * folders and files, raw archives built by hand, extraction into a sandboxed
 * destination. Each test file uses some of them. */
#ifndef LUAGENT_TAR_FIXTURES_H
#define LUAGENT_TAR_FIXTURES_H

#include <limits.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/core/buf.h"
#include "../../src/core/fs.h"
#include "../../src/core/tar.h"
#include "test.h"

#pragma GCC diagnostic ignored "-Wunused-function"

/* ---------- helpers: files ---------- */

static void make_temp(char *out, size_t outlen) {
  if (fs_temp_dir("luagent-tar", out, outlen) != 0) {
    perror("fs_temp_dir");
    exit(2);
  }
}

static void join(char *out, size_t outlen, const char *dir, const char *rel) {
  snprintf(out, outlen, "%s/%s", dir, rel);
}

static void put_file(const char *dir, const char *rel, const char *data, size_t len) {
  char path[PATH_MAX];
  join(path, sizeof path, dir, rel);
  if (fs_write_atomic(path, data, len, 0644) != 0) perror(path);
}

/* The file's content, or NULL when it cannot be read; free it. */
static char *slurp(const char *dir, const char *rel, size_t *len) {
  char path[PATH_MAX];
  buf b = BUF_INIT;
  join(path, sizeof path, dir, rel);
  if (fs_read_file(path, &b, NULL, 0) != 0) {
    buf_free(&b);
    return NULL;
  }
  if (len) *len = b.len;
  return b.data ? b.data : calloc(1, 1);
}

static int exists(const char *dir, const char *rel) {
  char path[PATH_MAX];
  struct stat st;
  join(path, sizeof path, dir, rel);
  return lstat(path, &st) == 0;
}

static int is_type(const char *dir, const char *rel, mode_t type) {
  char path[PATH_MAX];
  struct stat st;
  join(path, sizeof path, dir, rel);
  return lstat(path, &st) == 0 && (st.st_mode & S_IFMT) == type;
}

static int count_names(const char *dir) {
  char **names = fs_list(dir);
  int n = 0;
  while (names && names[n]) n++;
  fs_free_names(names);
  return names ? n : -1;
}

/* ---------- helpers: streams ---------- */

/* Streams the whole writer into out in reads of `chunk`; 0 or -1. */
static int stream_all(tar_writer *w, size_t chunk, buf *out) {
  char *tmp = malloc(chunk);
  size_t n;
  while ((n = tar_writer_read(w, tmp, chunk)) != 0 && n != (size_t)-1) buf_append(out, tmp, n);
  free(tmp);
  return n == (size_t)-1 ? -1 : 0;
}

typedef struct collected {
  buf text; /* "type name size [-> link]\n", the data, then "|\n" per entry */
  int skip; /* on_entry's answer */
} collected;

static int collect_entry(void *ctx, const tar_entry_info *e) {
  collected *c = ctx;
  buf_printf(&c->text, "%c %s %lld", e->type, e->name, e->size);
  if (*e->linkname) buf_printf(&c->text, " -> %s", e->linkname);
  buf_append_char(&c->text, '\n');
  return c->skip;
}

static int collect_data(void *ctx, const char *data, size_t n) {
  return buf_append(&((collected *)ctx)->text, data, n);
}

static int collect_end(void *ctx) { return buf_append_str(&((collected *)ctx)->text, "|\n"); }

static const tar_reader_callbacks COLLECT = {collect_entry, collect_data, collect_end};

/* Parses data in pieces of `chunk`; returns feed/finish's result and copies
 * the error into err. */
static int parse_in_chunks(const char *data, size_t len, size_t chunk, collected *c, char *err,
                           size_t errlen) {
  tar_reader *r = tar_reader_new(&COLLECT, c);
  int rc = buf_append(&c->text, "", 0); /* text is a string even when empty */
  for (size_t i = 0; i < len && rc == 0; i += chunk)
    rc = tar_reader_feed(r, data + i, len - i < chunk ? len - i : chunk);
  if (rc == 0) rc = tar_reader_finish(r);
  if (err) snprintf(err, errlen, "%s", tar_reader_error(r));
  tar_reader_free(r);
  return rc;
}

/* ---------- helpers: hand-made archives ---------- */

static void raw_header(buf *tar, const char *name, char type, const char *link, size_t size) {
  char h[512] = {0};
  memcpy(h, name, strlen(name) < 100 ? strlen(name) : 100);
  memcpy(h + 100, "0000644", 7);
  memcpy(h + 108, "0000000", 7);
  memcpy(h + 116, "0000000", 7);
  snprintf(h + 124, 12, "%011zo", size);
  memcpy(h + 136, "14000000000", 11);
  h[156] = type;
  memcpy(h + 157, link, strlen(link) < 100 ? strlen(link) : 100);
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += (unsigned char)h[i];
  snprintf(h + 148, 8, "%06o", sum);
  buf_append(tar, h, 512);
}

static void raw_padding(buf *tar, size_t size) {
  static const char zeros[1024];
  buf_append(tar, zeros, (512 - size % 512) % 512);
}

/* One entry with its data (NULL: none) and padding. */
static void raw_entry(buf *tar, const char *name, char type, const char *link, const char *data) {
  size_t len = data ? strlen(data) : 0;
  raw_header(tar, name, type, link, len);
  buf_append(tar, data ? data : "", len);
  raw_padding(tar, len);
}

static void raw_end(buf *tar) {
  static const char zeros[1024];
  buf_append(tar, zeros, sizeof zeros);
}

/* ---------- helpers: extraction sandboxes ---------- */

typedef struct sandbox {
  char root[PATH_MAX];
  char dest[PATH_MAX];    /* root/dest */
  char sibling[PATH_MAX]; /* root/sibling: must stay empty */
} sandbox;

static void sandbox_open(sandbox *s) {
  make_temp(s->root, sizeof s->root);
  join(s->dest, sizeof s->dest, s->root, "dest");
  join(s->sibling, sizeof s->sibling, s->root, "sibling");
  fs_mkdir_p(s->dest, 0755);
  fs_mkdir_p(s->sibling, 0755);
}

/* Nothing appeared beside dest, and the sibling directory is still empty. */
static int sandbox_sealed(const sandbox *s) {
  return count_names(s->root) == 2 && count_names(s->sibling) == 0;
}

static void sandbox_close(sandbox *s) { fs_remove_tree(s->root); }

/* Extracts the archive in pieces of `chunk`; *rc gets feed/finish's result. */
static tar_extract *extract(const char *dest, const char *strip, const buf *tar, size_t chunk, int *rc) {
  char err[256];
  tar_extract *x = tar_extract_new(dest, strip, err, sizeof err);
  if (!x) {
    fprintf(stderr, "    tar_extract_new: %s\n", err);
    exit(2);
  }
  *rc = 0;
  for (size_t i = 0; i < tar->len && *rc == 0; i += chunk)
    *rc = tar_extract_feed(x, tar->data + i, tar->len - i < chunk ? tar->len - i : chunk);
  if (*rc == 0) *rc = tar_extract_finish(x);
  return x;
}

/* True when extraction succeeded; says why not otherwise. */
static int extracted_ok(const tar_extract *x, int rc) {
  if (rc != 0) fprintf(stderr, "    extract failed: %s\n", tar_extract_error(x));
  return rc == 0;
}

/* The refusal reason recorded for an archive name, or NULL. */
static const char *reason_for(const tar_extract *x, const char *name) {
  for (size_t i = 0; i < tar_extract_refused_count(x); i++)
    if (strcmp(tar_extract_refused_name(x, i), name) == 0) return tar_extract_refused_reason(x, i);
  return NULL;
}

static const size_t CHUNKS[] = {1, 4096, 1 << 20};
#define NCHUNKS (sizeof CHUNKS / sizeof CHUNKS[0])

/* ---------- writer round trips ---------- */

static tar_writer *sample_writer(const char *host_file) {
  tar_writer *w = tar_writer_new(1000, 1000);
  char err[256];
  CHECK(tar_writer_add_file(w, "input/data.bin", host_file, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, "input/notes.txt", "hello", 5, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_dir(w, "out", 0700, err, sizeof err) == 0);
  CHECK(tar_writer_add_symlink(w, "input/link", "data.bin", err, sizeof err) == 0);
  return w;
}

static void binary_pattern(char *data, size_t len) {
  for (size_t i = 0; i < len; i++) data[i] = (char)(i * 7 % 256);
}

#endif

/* unpack: a tar stream on stdin extracted under a folder (see unpack.h). */
#include "unpack.h"

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
#include "fileio.h"
#include "frames.h"
#include "nofollow.h"
#include "tar.h"
#include "tar_internal.h"

#define CHUNK (256u << 10) /* bytes read from stdin at a time */

typedef struct unpacker {
  int root;            /* DIR: every entry is opened from it */
  long long max_bytes; /* 0: none */
  long long files, bytes, refused;
  /* the file being written */
  int fd;              /* -1 when none */
  place at;            /* its folder and its name there */
  char tmp[TEMP_NAME_MAX];
  char *entry;         /* its name in the archive */
  unsigned mode;
  long long size, mtime;
  char fatal[1024];    /* why it stopped; "" while it goes on */
} unpacker;

static int fail(unpacker *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(unpacker *u, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->fatal, sizeof u->fatal, fmt, ap);
  va_end(ap);
  return -1;
}

/* Errors that stop the whole unpack: the next entry would meet them too. */
static int fatal_errno(int e) { return e == ENOSPC || e == EDQUOT || e == EIO || e == EROFS || e == ENOMEM; }

/* Stops on a fatal errno e, else refuses the entry: *why = strerror. */
static int failed(unpacker *u, const char *what, const char *name, int e, const char **why) {
  const char *kind;
  if (fatal_errno(e)) return fail(u, "cannot %s %s: %s", what, name, write_error(e, &kind));
  *why = strerror(e);
  return 1;
}

/* NAME as one line, whatever a hostile archive put in it. */
static void print_name(const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c == 0x7f || c == '\\') printf("\\%03o", c);
    else putchar(c);
  }
}

static void refuse(unpacker *u, const char *name, const char *why) {
  u->refused++;
  fputs("refused ", stdout);
  print_name(name);
  printf(": %s\n", why);
}

/* The folder holding rel's last component, missing folders made: 0, or -1
 * when the entry is refused (*why) or the unpack stops (u->fatal). */
static int reach(unpacker *u, const char *rel, place *pl, const char **why) {
  *pl = open_place(u->root, rel, strlen(rel), 1);
  if (pl->dir >= 0 && strlen(pl->name) <= NAME_MAX) return 0;
  if (pl->dir >= 0) *why = strerror(ENAMETOOLONG);
  else if (fatal_errno(pl->err)) fail(u, "cannot make a folder for %s: %s", rel, pl->why);
  else *why = pl->why;
  place_free(pl);
  return -1;
}

static int make_dir(unpacker *u, const char *rel, unsigned mode, const char **why) {
  place pl;
  if (reach(u, rel, &pl, why) != 0) return u->fatal[0] ? -1 : 1;
  int answer = 1, made = mkdirat(pl.dir, pl.name, (mode & 0777) | 0700) == 0;
  struct stat st;
  if (!made && errno != EEXIST)
    answer = failed(u, "make the folder", rel, errno, why);
  else if (!made && fstatat(pl.dir, pl.name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    answer = failed(u, "look at", rel, errno, why);
  else if (!made && !S_ISDIR(st.st_mode))
    *why = S_ISLNK(st.st_mode) ? "a symbolic link is in the way (never followed)" : "a file is in the way";
  place_free(&pl);
  return answer;
}

/* The file being written is given up: nothing is left of it. */
static void drop_file(unpacker *u) {
  if (u->fd >= 0) temp_file_drop(u->at.dir, u->tmp, u->fd);
  u->fd = -1;
  place_free(&u->at);
  free(u->entry);
  u->entry = NULL;
}

/* Starts a file: its temporary file made, on_data writes into it. */
static int open_file(unpacker *u, const char *rel, const tar_entry_info *e, const char **why) {
  if (reach(u, rel, &u->at, why) != 0) return u->fatal[0] ? -1 : 1;
  struct stat st;
  int answer = 1;
  if (fstatat(u->at.dir, u->at.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    *why = "a folder is in the way";
  else if ((u->fd = temp_file(u->at.dir, u->tmp)) < 0)
    answer = failed(u, "create a file in the folder of", rel, errno, why);
  else if (!(u->entry = strdup(e->name)))
    answer = fail(u, "out of memory");
  else
    answer = 0, u->mode = e->mode & 0777, u->size = e->size, u->mtime = e->mtime;
  if (answer != 0) drop_file(u);
  return answer;
}

/* Why an entry of this type is not extracted, or NULL. */
static const char *type_problem(char type) {
  switch (type) {
    case '0': case '5': return NULL;
    case '1': return "a hard link (only files and folders are unpacked)";
    case '2': return "a symbolic link (only files and folders are unpacked)";
    case '3': case '4': return "a device (only files and folders are unpacked)";
    case '6': return "a fifo (only files and folders are unpacked)";
    default: return "an unsupported entry type (only files and folders are unpacked)";
  }
}

static int on_entry(void *ctx, const tar_entry_info *e) {
  unpacker *u = ctx;
  buf rel = BUF_INIT;
  const char *why = tar_normalize_name(e->name, &rel);
  int answer = 1;
  if (why && strcmp(why, "out of memory") == 0) answer = fail(u, "out of memory");
  if (!why) why = type_problem(e->type);
  if (!why && e->type == '0' && u->max_bytes && e->size > u->max_bytes - u->bytes)
    why = "over the byte limit (MAX_BYTES)";
  if (!why && rel.len == 0 && e->type == '0') why = "a file named like the folder itself";
  if (!why && rel.len > 0)
    answer = e->type == '5' ? make_dir(u, rel.data, e->mode, &why) : open_file(u, rel.data, e, &why);
  if (why && answer >= 0) refuse(u, e->name, why);
  buf_free(&rel);
  return answer;
}

static int on_data(void *ctx, const char *data, size_t n) {
  unpacker *u = ctx;
  if (u->fd < 0) return 0;
  if (write_all(u->fd, data, n) != 0) {
    const char *kind;
    return fail(u, "cannot write %s: %s", u->entry, write_error(errno, &kind));
  }
  return 0;
}

/* A file's data is all there: its mtime and mode set, renamed over its name. */
static int on_entry_end(void *ctx) {
  unpacker *u = ctx;
  if (u->fd < 0) return 0;
  struct timespec times[2] = {{0, UTIME_OMIT}, {(time_t)u->mtime, 0}};
  futimens(u->fd, times); /* best effort: the data is what matters */
  int rc = temp_file_commit(u->at.dir, u->tmp, u->fd, u->at.name, u->mode);
  int e = errno;
  u->fd = -1;
  const char *why = NULL;
  int answer = rc == 0 ? 0 : failed(u, "write", u->entry, e, &why);
  if (why) refuse(u, u->entry, why);
  if (rc == 0) u->files++, u->bytes += u->size;
  drop_file(u);
  return answer < 0 ? -1 : 0;
}

/* DIR, an absolute path to a folder, opened without following a link. */
static int open_root(unpacker *u, const char *dir) {
  place pl = open_place(-1, dir, strlen(dir), 0);
  int fd = pl.dir >= 0 ? open_dir_nofollow(pl.dir, pl.name) : -1;
  struct stat st;
  if (pl.dir >= 0 && fd < 0)
    pl.why = fstatat(pl.dir, pl.name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)
           ? "it is a symbolic link (never followed)" : strerror(errno);
  if (fd < 0) fail(u, "cannot open the folder %s: %s", dir, pl.why);
  place_free(&pl);
  return fd;
}

/* Feeds stdin to the reader until the stream ends or something stops it. */
static void feed(unpacker *u, tar_reader *r) {
  char *chunk = malloc(CHUNK);
  ssize_t n = 0;
  int rc = chunk ? 0 : fail(u, "out of memory");
  while (rc == 0 && (n = read_some(0, chunk, CHUNK)) > 0) rc = tar_reader_feed(r, chunk, (size_t)n);
  if (rc == 0 && n < 0) fail(u, "cannot read the tar stream: %s", strerror(errno));
  else if (rc == 0) rc = tar_reader_finish(r);
  if (rc != 0 && !u->fatal[0]) fail(u, "malformed tar stream: %s", tar_reader_error(r));
  free(chunk);
}

int unpack_main(const char *dir, long long max_bytes) {
  static const tar_reader_callbacks callbacks = {on_entry, on_data, on_entry_end};
  unpacker u = {.max_bytes = max_bytes, .fd = -1, .at = {-1, NULL, NULL, NULL, 0}};
  umask(0); /* modes are the archive's (masked to 0777), as put's: not the command's umask */
  u.root = open_root(&u, dir);
  tar_reader *r = u.root >= 0 ? tar_reader_new(&callbacks, &u) : NULL;
  if (u.root >= 0 && !r) fail(&u, "out of memory");
  if (r) feed(&u, r);
  drop_file(&u); /* a file a fatal error cut */
  tar_reader_free(r);
  if (u.root >= 0) close(u.root);
  printf("unpacked %lld files, %lld bytes\n", u.files, u.bytes);
  fflush(stdout);
  if (u.fatal[0]) fprintf(stderr, "unpack: %s\n", u.fatal);
  return u.fatal[0] ? 2 : u.refused ? 1 : 0;
}

/* fileio: the `read` and `put` ops (see fileio.h), answered by serve itself. */
#include "fileio.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "frames.h"
#include "fsid.h"
#include "nofollow.h"

#define CHUNK (1u << 20) /* bytes per O frame, and per read */

/* ---- read ---- */

static void read_fail(long long id, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void read_fail(long long id, const char *kind, const char *fmt, ...) {
  buf line = BUF_INIT;
  buf_printf(&line, "%s ", kind);
  va_list ap;
  va_start(ap, fmt);
  char text[512];
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  buf_printf(&line, "%s\n", text);
  frame_data('E', id, line.data, line.len);
  frame_exit(id, 2, "-", 0);
  buf_free(&line);
}

/* The kind and text for a file that is there but not a regular file. */
static const char *not_regular(mode_t mode, const char **kind) {
  *kind = S_ISLNK(mode) ? "refused" : "not_a_file";
  return S_ISLNK(mode) ? "it is a symbolic link (never followed)" : S_ISDIR(mode) ? "it is a folder, not a file"
       : "not a regular file (a device, fifo or socket)";
}

static void read_file(long long id, int dir, const char *name, long long max) {
  struct stat st;
  const char *kind;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) read_fail(id, "not_found", "no such file");
    else read_fail(id, "unreadable", "%s", strerror(errno));
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    const char *why = not_regular(st.st_mode, &kind);
    read_fail(id, kind, "%s", why);
    return;
  }
  if (max > 0 && st.st_size > max) {
    read_fail(id, "too_large", "the file is %lld bytes, more than max_bytes (%lld)", (long long)st.st_size, max);
    return;
  }
  int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int e = errno;
    if (fd >= 0) close(fd);
    if (fd >= 0) read_fail(id, "not_a_file", "it changed into something else than a file");
    else read_fail(id, e == ELOOP ? "refused" : "unreadable", "%s",
                   e == ELOOP ? "it is a symbolic link (never followed)" : strerror(e));
    return;
  }
  char *chunk = malloc(CHUNK);
  long long total = 0;
  ssize_t n = 0;
  while (chunk && (n = read_some(fd, chunk, CHUNK)) > 0) {
    total += n;
    if (max > 0 && total > max) break; /* it grew while read */
    frame_data('O', id, chunk, (size_t)n);
  }
  int e = errno;
  close(fd);
  free(chunk);
  if (!chunk) read_fail(id, "unreadable", "out of memory");
  else if (max > 0 && total > max) read_fail(id, "too_large", "the file grew past max_bytes (%lld) while read", max);
  else if (n < 0) read_fail(id, "unreadable", "%s", strerror(e));
  else frame_exit(id, 0, "-", 0);
}

void read_request(const sv_request *req, unsigned uid, unsigned gid) {
  const sv_field *path = sv_field_find(req, SV_TAG_PATH);
  long long max = 0;
  if (!path || sv_field_number(req, SV_TAG_MAXBYTES, &max) < 0) {
    read_fail(req->id, "refused", "%s", path ? "the byte limit is not a decimal" : "no path (no 'p' field)");
    return;
  }
  int how = fsid_enter(uid, gid);
  if (how < 0) {
    read_fail(req->id, "unreadable", "%s", "cannot take the command user's identity");
    return;
  }
  place pl = open_place(-1, path->data, path->len, 0);
  if (pl.dir < 0) read_fail(req->id, strcmp(pl.kind, "no_space") == 0 ? "unreadable" : pl.kind, "%s", pl.why);
  else read_file(req->id, pl.dir, pl.name, max);
  fsid_leave(how);
  place_free(&pl);
}

/* ---- put ---- */

static void put_fail(long long id, const char *kind, const char *why) {
  frame_failure(id, "%s %s", kind, why);
  frame_exit(id, 1, "-", 0);
}

const char *write_error(int e, const char **kind) {
  *kind = e == ENOSPC || e == EDQUOT ? "no_space" : "unwritable";
  return e == ENOSPC || e == EDQUOT ? "no space left in the workspace (workspace_size)" : strerror(e);
}

int temp_file(int dir, char tmp[TEMP_NAME_MAX]) {
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    snprintf(tmp, TEMP_NAME_MAX, ".luagent-put.%ld.%d", (long)getpid(), rand());
    fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  return fd;
}

void temp_file_drop(int dir, const char *tmp, int fd) {
  int e = errno;
  close(fd);
  unlinkat(dir, tmp, 0);
  errno = e;
}

int temp_file_commit(int dir, const char *tmp, int fd, const char *name, unsigned mode) {
  if (fchmod(fd, mode) != 0) return temp_file_drop(dir, tmp, fd), -1;
  int rc = close(fd);
  if (rc == 0) rc = renameat(dir, tmp, dir, name);
  if (rc != 0) {
    int e = errno;
    unlinkat(dir, tmp, 0);
    errno = e;
  }
  return rc;
}

static void put_file(long long id, int dir, const char *name, const sv_field *data, unsigned mode) {
  struct stat st;
  const char *kind;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode)) {
    const char *why = not_regular(st.st_mode, &kind);
    put_fail(id, kind, why);
    return;
  }
  char tmp[TEMP_NAME_MAX];
  int fd = temp_file(dir, tmp);
  int rc = fd < 0 ? -1 : data ? write_all(fd, data->data, data->len) : 0;
  if (fd >= 0 && rc != 0) temp_file_drop(dir, tmp, fd);
  if (fd >= 0 && rc == 0) rc = temp_file_commit(dir, tmp, fd, name, mode);
  if (rc != 0) {
    const char *why = write_error(errno, &kind);
    put_fail(id, kind, why);
    return;
  }
  frame_exit(id, 0, "-", 0);
}

void put_request(const sv_request *req, unsigned uid, unsigned gid) {
  const sv_field *path = sv_field_find(req, SV_TAG_PATH);
  long long mode = 0644;
  if (!path || sv_field_number(req, SV_TAG_MODE, &mode) < 0 || mode > 07777) {
    put_fail(req->id, "refused", path ? "the mode is not a decimal 0..4095" : "no path (no 'p' field)");
    return;
  }
  int how = fsid_enter(uid, gid);
  if (how < 0) {
    put_fail(req->id, "unwritable", "cannot take the command user's identity");
    return;
  }
  place pl = open_place(-1, path->data, path->len, 1);
  if (pl.dir < 0) put_fail(req->id, strcmp(pl.kind, "unreadable") == 0 ? "unwritable" : pl.kind, pl.why);
  else put_file(req->id, pl.dir, pl.name, sv_field_find(req, SV_TAG_STDIN), (unsigned)mode);
  fsid_leave(how);
  place_free(&pl);
}

/* nofollow: folders opened without following a link (see nofollow.h). */
#include "nofollow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

int open_dir_nofollow(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat named, opened;
  if (fstatat(dirfd, name, &named, AT_SYMLINK_NOFOLLOW) != 0 || fstat(fd, &opened) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  if (S_ISLNK(named.st_mode) || named.st_dev != opened.st_dev || named.st_ino != opened.st_ino) {
    close(fd);
    errno = ELOOP;
    return -1;
  }
  return fd;
}

/* 1 when a component of path[0..len) is "." or "..". */
static int dotted(const char *path, size_t len) {
  for (size_t i = 0; i < len;) {
    size_t n = 0;
    while (i + n < len && path[i + n] != '/') n++;
    if ((n == 1 && path[i] == '.') || (n == 2 && path[i] == '.' && path[i + 1] == '.')) return 1;
    i += n + 1;
  }
  return 0;
}

/* Why comp could not be opened (nor made) in fd, errno e: fills pl. */
static void explain(place *pl, int fd, const char *comp, int e) {
  struct stat st;
  int is_link = fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
  int full = e == ENOSPC || e == EDQUOT;
  pl->err = e;
  pl->kind = is_link ? "refused" : e == ENOENT ? "not_found" : e == ENOTDIR ? "not_a_file" : full ? "no_space"
           : "unreadable";
  pl->why = is_link ? "a symbolic link in the path (never followed)" : e == ENOENT ? "a folder of the path does not exist"
          : e == ENOTDIR ? "a component of the path is not a folder" : full
          ? "no space left in the workspace (workspace_size)" : strerror(e);
}

/* The form of path, before any folder is opened or made: NULL, or why not. */
static const char *form_problem(int from, const char *path, size_t len) {
  if (len == 0 || (path[0] != '/' && from < 0)) return "not an absolute path";
  if (memchr(path, '\0', len)) return "a NUL byte in the path";
  if (dotted(path, len)) return "a '.' or '..' in the path";
  return NULL;
}

place open_place(int from, const char *path, size_t len, int make) {
  place pl = {-1, NULL, "refused", form_problem(from, path, len), 0};
  if (pl.why) return pl;
  int fd = path[0] == '/' ? open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : fcntl(from, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) explain(&pl, AT_FDCWD, "/", errno);
  buf comp = BUF_INIT;
  const char *p = path, *end = path + len;
  while (fd >= 0) {
    while (p < end && *p == '/') p++;
    const char *slash = memchr(p, '/', (size_t)(end - p));
    size_t n = slash ? (size_t)(slash - p) : (size_t)(end - p);
    const char *after = p + n;
    while (after < end && *after == '/') after++;
    buf_clear(&comp);
    if (n == 0) {
      pl.why = "the path names a folder";
      break;
    }
    if (buf_append(&comp, p, n) != 0) {
      explain(&pl, fd, "", ENOMEM);
      break;
    }
    if (after == end) { /* the last component */
      pl.name = comp.data, comp.data = NULL;
      pl.dir = fd, fd = -1;
      break;
    }
    int next = open_dir_nofollow(fd, comp.data);
    if (next < 0 && errno == ENOENT && make && mkdirat(fd, comp.data, 0755) == 0)
      next = open_dir_nofollow(fd, comp.data);
    if (next < 0) explain(&pl, fd, comp.data, errno);
    close(fd);
    fd = next;
    p = after;
  }
  if (fd >= 0) close(fd);
  buf_free(&comp);
  return pl;
}

void place_free(place *pl) {
  if (pl->dir >= 0) close(pl->dir);
  pl->dir = -1;
  free(pl->name);
  pl->name = NULL;
}

/* fs: host-side file operations (see fs.h). */
#include "fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int fs_read_file(const char *path, buf *out, char *why, size_t whylen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) goto fail;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    errno = EISDIR;
    goto fail;
  }
  if (st.st_size > 0 && buf_reserve(out, (size_t)st.st_size) != 0) {
    close(fd);
    errno = ENOMEM;
    goto fail;
  }
  for (;;) {
    if (buf_reserve(out, 65536) != 0) {
      close(fd);
      errno = ENOMEM;
      goto fail;
    }
    ssize_t n = read(fd, out->data + out->len, out->cap - out->len - 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int saved = errno;
      close(fd);
      errno = saved;
      goto fail;
    }
    if (n == 0) break;
    out->len += (size_t)n;
    out->data[out->len] = '\0';
  }
  close(fd);
  return 0;
fail:
  if (why) snprintf(why, whylen, "%s", strerror(errno));
  return -1;
}

int fs_write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int fs_write_atomic(const char *path, const void *data, size_t len, int mode) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = mkstemp(tmp);
  if (fd < 0) return -1;
  int rc = fs_write_all(fd, data, len);
  if (rc == 0) rc = fchmod(fd, (mode_t)mode & 07777);
  int saved = errno;
  if (close(fd) != 0 && rc == 0) rc = -1, saved = errno;
  if (rc == 0 && rename(tmp, path) != 0) rc = -1, saved = errno;
  if (rc != 0) {
    unlink(tmp);
    errno = saved;
  }
  return rc;
}

int fs_append(const char *path, const void *data, size_t len) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  int rc = fs_write_all(fd, data, len);
  int saved = errno;
  close(fd);
  errno = saved;
  return rc;
}

int fs_mkdir_p(const char *path, int mode) {
  char tmp[PATH_MAX];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof tmp) {
    errno = len ? ENAMETOOLONG : ENOENT;
    return -1;
  }
  memcpy(tmp, path, len + 1);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, (mode_t)mode) != 0) {
    struct stat st;
    if (errno != EEXIST) return -1;
    if (stat(tmp, &st) != 0 || !S_ISDIR(st.st_mode)) {
      errno = ENOTDIR;
      return -1;
    }
  }
  return 0;
}

static int remove_at(int parent, const char *name) {
  struct stat st;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) return unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : -1;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (remove_at(dirfd(d), e->d_name) != 0) rc = -1;
  }
  closedir(d);
  if (rc == 0 && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT) rc = -1;
  return rc;
}

int fs_remove_tree(const char *path) { return remove_at(AT_FDCWD, path); }

int fs_temp_dir(const char *prefix, char *out, size_t outlen) {
  const char *tmpdir = getenv("TMPDIR");
  if (!tmpdir || !*tmpdir) tmpdir = "/tmp";
  if (snprintf(out, outlen, "%s/%s-XXXXXX", tmpdir, prefix) >= (int)outlen) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return mkdtemp(out) ? 0 : -1;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char **fs_list(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return NULL;
  size_t n = 0, cap = 16;
  char **names = malloc(cap * sizeof *names);
  struct dirent *e;
  while (names && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (n + 1 >= cap) {
      char **grown = realloc(names, (cap *= 2) * sizeof *names);
      if (!grown) {
        names[n] = NULL;
        fs_free_names(names);
        names = NULL;
        break;
      }
      names = grown;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (!names) {
    errno = ENOMEM;
    return NULL;
  }
  names[n] = NULL;
  qsort(names, n, sizeof *names, compare_names);
  return names;
}

void fs_free_names(char **names) {
  if (!names) return;
  for (char **p = names; *p; p++) free(*p);
  free(names);
}

static int join_path(char *out, size_t outlen, const char *a, const char *b) {
  int n = snprintf(out, outlen, "%s%s%s", a, (*a && *b) ? "/" : "", b);
  if (n < 0 || (size_t)n >= outlen) {
    errno = ENAMETOOLONG;
    return -1;
  }
  return 0;
}

static int walk_dir(const char *root, const char *rel, fs_visit_fn visit, void *ctx) {
  char dir[PATH_MAX];
  if (join_path(dir, sizeof dir, root, rel) != 0) return -1;
  char **names = fs_list(dir);
  if (!names) return -1;
  int rc = 0;
  for (char **p = names; *p && rc == 0; p++) {
    char child_rel[PATH_MAX], child[PATH_MAX];
    if (join_path(child_rel, sizeof child_rel, rel, *p) != 0 ||
        join_path(child, sizeof child, dir, *p) != 0) {
      rc = -1;
      break;
    }
    struct stat st;
    if (lstat(child, &st) != 0) continue; /* vanished while walking */
    rc = visit(child_rel, &st, ctx);
    if (rc == 0 && S_ISDIR(st.st_mode)) rc = walk_dir(root, child_rel, visit, ctx);
  }
  fs_free_names(names);
  return rc;
}

int fs_walk(const char *root, fs_visit_fn visit, void *ctx) { return walk_dir(root, "", visit, ctx); }

const char *fs_type_name(mode_t mode) {
  if (S_ISREG(mode)) return "file";
  if (S_ISDIR(mode)) return "directory";
  if (S_ISLNK(mode)) return "link";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "device";
  return "other";
}

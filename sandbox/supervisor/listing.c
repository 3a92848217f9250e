/* listing: the `list` op (see listing.h), answered by serve itself: a stat
 * walk and a scan of /proc, no fork, so a listing costs a round trip. */
#include "listing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "frames.h"
#include "fsid.h"
#include "watch.h"
#include "nofollow.h"

#define MAX_DEPTH 64
#define CHUNK 65536

typedef struct lister {
  long long id;
  buf out, err;  /* pending O and E bytes */
  buf rel;       /* the path of the current entry, relative to the root */
  long long entries, max_entries;
  int stopped;
} lister;

static void flush(lister *l, size_t keep_below) {
  if (l->out.len >= keep_below && l->out.len) frame_data('O', l->id, l->out.data, l->out.len), buf_clear(&l->out);
  if (l->err.len >= keep_below && l->err.len) frame_data('E', l->id, l->err.data, l->err.len), buf_clear(&l->err);
}

static void left_out(lister *l, const char *reason) {
  buf_printf(&l->err, "%s %zu:%s\n", reason, l->rel.len, l->rel.data ? l->rel.data : "");
  flush(l, CHUNK);
}

static void file_line(lister *l, const struct stat *st) {
  buf_printf(&l->out, "f %lld %lld.%09ld %lld.%09ld %llu %zu:%s\n", (long long)st->st_size,
             (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec,
             (unsigned long long)st->st_ino, l->rel.len, l->rel.data);
  flush(l, CHUNK);
}

/* Walks the directory open at fd (taken over): a line per regular file. */
static void walk(lister *l, int fd, int depth) {
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    left_out(l, "unreadable");
    return;
  }
  size_t len = l->rel.len;
  for (struct dirent *d; !l->stopped && (d = readdir(dir));) {
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    if (len) buf_append_char(&l->rel, '/');
    buf_append_str(&l->rel, d->d_name);
    struct stat st;
    if (l->max_entries && l->entries >= l->max_entries) {
      left_out(l, "too_many");
      l->stopped = 1;
    } else if (l->entries++, fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      left_out(l, "unreadable");
    } else if (S_ISREG(st.st_mode)) {
      file_line(l, &st);
    } else if (S_ISDIR(st.st_mode) && depth + 1 >= MAX_DEPTH) {
      left_out(l, "too_deep");
    } else if (S_ISDIR(st.st_mode)) {
      int sub = open_dir_nofollow(dirfd(dir), d->d_name);
      if (sub < 0) left_out(l, "unreadable");
      else walk(l, sub, depth + 1);
    } /* links, devices, fifos, sockets: not files to copy */
    l->rel.len = len;
    if (l->rel.data) l->rel.data[len] = '\0';
  }
  closedir(dir);
}

/* The directory at the absolute path, opened one component at a time
 * without following a symlink; -1 when it is not there (or not a folder). */
static int open_root(const char *path) {
  if (path[0] != '/') return -1;
  int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  buf comp = BUF_INIT;
  for (const char *p = path; fd >= 0 && *p;) {
    while (*p == '/') p++;
    size_t n = strcspn(p, "/");
    if (n == 0) break;
    buf_clear(&comp);
    buf_append(&comp, p, n);
    p += n;
    int next = strcmp(comp.data, "..") == 0 ? -1 : open_dir_nofollow(fd, comp.data);
    close(fd);
    fd = next;
  }
  buf_free(&comp);
  return fd;
}

/* Whether /proc/PID/fdinfo/FD says the file is open for writing. */
static int open_for_writing(int fdinfo_dir, const char *fd_name) {
  int fd = openat(fdinfo_dir, fd_name, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[512];
  ssize_t n = read_some(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char *flags = strstr(text, "flags:");
  return flags && (strtoul(flags + 6, NULL, 8) & O_ACCMODE) != O_RDONLY;
}

/* A "w" line for each file under root that a process the walk's identity may
 * inspect (the command user's, which are all the commands) holds open for
 * writing. */
static void writers(lister *l, const char *root) {
  size_t rlen = strlen(root);
  while (rlen > 1 && root[rlen - 1] == '/') rlen--;
  DIR *proc = opendir("/proc");
  for (struct dirent *p; proc && (p = readdir(proc));) {
    if (p->d_name[0] < '1' || p->d_name[0] > '9') continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%.20s/fd", p->d_name);
    int fds_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *fds = fds_fd >= 0 ? fdopendir(fds_fd) : NULL;
    if (!fds) {
      if (fds_fd >= 0) close(fds_fd);
      continue;
    }
    snprintf(path, sizeof path, "/proc/%.20s/fdinfo", p->d_name);
    int info = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (struct dirent *e; info >= 0 && (e = readdir(fds));) {
      char target[PATH_MAX];
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      ssize_t n = readlinkat(dirfd(fds), e->d_name, target, sizeof target - 1);
      if (n <= (ssize_t)rlen || strncmp(target, root, rlen) != 0 || target[rlen] != '/') continue;
      target[n] = '\0';
      if (!open_for_writing(info, e->d_name)) continue;
      buf_printf(&l->out, "w %zu:%s\n", strlen(target + rlen + 1), target + rlen + 1);
      flush(l, CHUNK);
    }
    if (info >= 0) close(info);
    closedir(fds);
  }
  if (proc) closedir(proc);
}

void list_request(const sv_request *req, unsigned uid, unsigned gid) {
  lister l = {.id = req->id, .out = BUF_INIT, .err = BUF_INIT, .rel = BUF_INIT};
  const sv_field *path = sv_field_find(req, SV_TAG_PATH);
  if (!path || sv_field_number(req, SV_TAG_MAXENTRIES, &l.max_entries) < 0) {
    frame_failure(req->id, "cannot list: %s", path ? "the entry limit is not a decimal" : "no path (no 'p' field)");
    frame_exit(req->id, 2, "-", 0);
    return;
  }
  char *root = strndup(path->data, path->len);
  /* the mark before the walk: what changes during it is after this mark; and
   * before fsid_enter, as taking it may set watches again (as the user too) */
  long long mark = watch_generation();
  /* the command user's view: its permissions, and its processes' fds */
  int how = fsid_enter(uid, gid);
  int fd = how < 0 ? -1 : root && strlen(root) == path->len ? open_root(root) : -1;
  int code = 0;
  buf_append_str(&l.rel, "");
  if (fd < 0) {
    buf_printf(&l.err, "missing %zu:%s\n", path->len, root ? root : "");
    code = 2;
  } else {
    walk(&l, fd, 0);
    writers(&l, root);
  }
  fsid_leave(how);
  flush(&l, 0);
  frame_exit_marked(req->id, code, "-", 0, mark);
  buf_free(&l.out), buf_free(&l.err), buf_free(&l.rel);
  free(root);
}

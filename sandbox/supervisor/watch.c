/* watch: the change generation of one folder (see watch.h), with inotify. */
#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsid.h"
#include "nofollow.h"

#define MAX_DEPTH 64

/* a folder under the root, a file under it, a folder on the root's path */
enum kind { K_DIR, K_FILE, K_ABOVE };

#define DIR_EVENTS                                                                                                 \
  (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | \
   IN_MOVE_SELF | IN_ONLYDIR)
#define FILE_EVENTS (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DONT_FOLLOW)
#define ABOVE_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

typedef struct mark {
  int wd;
  enum kind kind;
  char *name;    /* K_DIR: its path under the root ("" the root); K_ABOVE: the next component */
  unsigned pass; /* the setting of the watches that last found it */
} mark;

static struct {
  int fd;          /* inotify, -1 before the first watch_start */
  char *root;
  unsigned uid, gid;
  long long generation;
  int known;       /* everything under the root is watched */
  int again;       /* an event asks for the watches to be set again */
  unsigned pass;
  mark *marks;     /* sorted by wd */
  size_t n, cap;
} w = {.fd = -1};

/* ---- the table of watches ---- */

static size_t position(int wd) {
  size_t lo = 0, hi = w.n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (w.marks[mid].wd < wd) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static void drop(size_t i) {
  free(w.marks[i].name);
  memmove(&w.marks[i], &w.marks[i + 1], (w.n - i - 1) * sizeof *w.marks);
  w.n--;
}

/* Records wd (new, or found again). 0, or -1 when the table is full. */
static int record(int wd, enum kind kind, const char *name) {
  size_t i = position(wd);
  char *copy = name ? strdup(name) : NULL;
  if (name && !copy) return -1;
  if (i < w.n && w.marks[i].wd == wd) {
    free(w.marks[i].name);
    w.marks[i] = (mark){wd, kind, copy, w.pass};
    return 0;
  }
  if (w.n == w.cap) {
    size_t cap = w.cap ? w.cap * 2 : 64;
    mark *grown = w.n < WATCH_MAX ? realloc(w.marks, cap * sizeof *grown) : NULL;
    if (!grown) {
      free(copy);
      return -1;
    }
    w.marks = grown, w.cap = cap;
  }
  if (w.n == WATCH_MAX) {
    free(copy);
    return -1;
  }
  memmove(&w.marks[i + 1], &w.marks[i], (w.n - i) * sizeof *w.marks);
  w.marks[i] = (mark){wd, kind, copy, w.pass};
  w.n++;
  return 0;
}

/* Watches path (mask); a path gone meanwhile is no failure (its removal
 * raised the generation). Anything else that fails makes the state unknown. */
static void add(const char *path, uint32_t mask, enum kind kind, const char *name) {
  int wd = inotify_add_watch(w.fd, path, mask);
  if (wd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) w.known = 0;
    return;
  }
  if (record(wd, kind, name) != 0) {
    inotify_rm_watch(w.fd, wd);
    w.known = 0;
  }
}

/* ---- setting the watches ---- */

static void walk(int fd, const char *rel, int depth);

/* The folder name in the folder at parent (rel under the root), depth levels down. */
static void walk_into(int parent, const char *name, const char *rel, int depth) {
  if (depth >= MAX_DEPTH) {
    w.known = 0;
    return;
  }
  int sub = open_dir_nofollow(parent, name);
  if (sub < 0) {
    if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP) w.known = 0; /* else it went: an event */
    return;
  }
  char *below = malloc(strlen(rel) + strlen(name) + 2);
  if (!below) {
    close(sub);
    w.known = 0;
    return;
  }
  sprintf(below, "%s%s%s", rel, *rel ? "/" : "", name);
  walk(sub, below, depth);
  free(below);
}

/* Watches the folder open at fd (taken over), rel under the root, and everything in it. */
static void walk(int fd, const char *rel, int depth) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  add(path, DIR_EVENTS, K_DIR, rel); /* before reading it: what comes in meanwhile is an event */
  DIR *dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    w.known = 0;
    return;
  }
  for (struct dirent *d; w.known && (d = readdir(dir));) {
    if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(dirfd(dir), d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) w.known = 0; /* a folder it may read but not search */
      continue;                         /* else gone: its removal was an event */
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd(dir), d->d_name);
    if (S_ISREG(st.st_mode)) {
      add(path, FILE_EVENTS, K_FILE, NULL);
    } else if (S_ISDIR(st.st_mode)) {
      walk_into(dirfd(dir), d->d_name, rel, depth + 1);
    }
  }
  closedir(dir);
}

/* Sets every watch again: the folders on the root's path, then the tree
 * under it; watches not found again are removed. Raises the generation. */
static void arm(void) {
  int how = fsid_enter(w.uid, w.gid); /* the command user's view, as listing.c */
  w.pass++;
  w.known = 1;
  w.generation++;
  int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char name[NAME_MAX + 1], path[64];
  for (const char *p = w.root; fd >= 0 && w.known;) {
    while (*p == '/') p++;
    size_t len = strcspn(p, "/");
    if (len == 0) break;
    snprintf(name, sizeof name, "%.*s", (int)len, p);
    p += len;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    add(path, ABOVE_EVENTS, K_ABOVE, name);
    int next = open_dir_nofollow(fd, name);
    if (next < 0 && errno != ENOENT && errno != ENOTDIR && errno != ELOOP) w.known = 0;
    close(fd);
    fd = next; /* not there (yet): its folder's watch says when it comes */
  }
  if (fd >= 0 && w.known) walk(fd, "", 0);
  else if (fd >= 0) close(fd);
  for (size_t i = w.n; i-- > 0;)
    if (w.marks[i].pass != w.pass) inotify_rm_watch(w.fd, w.marks[i].wd), drop(i);
  fsid_leave(how);
}

/* A file created or moved into folder m: its own watch (the folder's
 * already raised the generation). */
static void add_file(const mark *m, const char *file) {
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s%s%s/%s", w.root, *m->name ? "/" : "", m->name, file);
  if (n < 0 || (size_t)n >= sizeof path) {
    w.known = 0;
    return;
  }
  int how = fsid_enter(w.uid, w.gid);
  struct stat st;
  if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) add(path, FILE_EVENTS, K_FILE, NULL);
  fsid_leave(how);
}

/* ---- events ---- */

static void on_event(const struct inotify_event *e) {
  if (e->mask & IN_Q_OVERFLOW) {
    w.generation++, w.again = 1; /* events were lost: new folders among them */
    return;
  }
  size_t i = position(e->wd);
  if (i >= w.n || w.marks[i].wd != e->wd) return; /* removed already */
  if (e->mask & IN_IGNORED) {
    drop(i); /* its inode is gone; the removal was an event of its folder */
    return;
  }
  mark *m = &w.marks[i];
  if (m->kind == K_ABOVE) {
    if ((e->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) || (e->len && strcmp(e->name, m->name) == 0))
      w.generation++, w.again = 1;
    return;
  }
  w.generation++;
  if (m->kind == K_FILE) return;
  int dir_moved = (e->mask & IN_ISDIR) && (e->mask & (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM));
  if (dir_moved || (e->mask & (IN_MOVE_SELF | IN_DELETE_SELF))) w.again = 1; /* folders' paths changed */
  else if ((e->mask & (IN_CREATE | IN_MOVED_TO)) && e->len) add_file(m, e->name);
}

/* Reads every event waiting; sets the watches again when one asks for it
 * (or, while unknown, after any event: the walk may succeed now). */
static void drain(void) {
  char chunk[65536] __attribute__((aligned(__alignof__(struct inotify_event))));
  int any = 0;
  for (;;) {
    ssize_t n = read(w.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    any = 1;
    for (ssize_t at = 0; at + (ssize_t)sizeof(struct inotify_event) <= n;) {
      const struct inotify_event *e = (const struct inotify_event *)(chunk + at);
      on_event(e);
      at += (ssize_t)(sizeof *e + e->len);
    }
  }
  if (w.again || (any && !w.known)) {
    w.again = 0;
    arm();
  }
}

/* ---- the interface ---- */

const char *watch_start(const char *path, size_t len, unsigned uid, unsigned gid) {
  if (len == 0 || path[0] != '/' || memchr(path, '\0', len)) return "the path is not absolute";
  char *root = strndup(path, len);
  if (!root) return "out of memory";
  for (const char *p = root; (p = strstr(p, "..")); p += 2)
    if ((p == root || p[-1] == '/') && (p[2] == '/' || p[2] == '\0')) {
      free(root);
      return "the path has a '..' component";
    }
  if (w.fd < 0 && (w.fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
    free(root);
    return errno == EMFILE ? "inotify: the engine's host has no inotify instance left (fs.inotify.max_user_instances)"
                           : "inotify is not available";
  }
  free(w.root);
  w.root = root, w.uid = uid, w.gid = gid;
  drain();
  arm();
  if (!w.known) return "a folder or file under it cannot be watched (unreadable, too deep, or too many)";
  return NULL;
}

long long watch_generation(void) {
  if (w.fd < 0) return -1;
  drain();
  return w.known ? w.generation : -1;
}
